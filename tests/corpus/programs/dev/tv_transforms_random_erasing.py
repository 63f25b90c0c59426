"""torchvision RandomErasing (v1): `if torch.rand(1) < self.p`, then get_params' `.item()` draws and `int(round(...))` sizes.

Source: pytorch/vision@v0.29.2:torchvision/transforms/transforms.py:1630-1747; torchvision/transforms/_functional_tensor.py:erase
Kept: forward's value normalisation (number / str / sequence), the
channel-count ValueError, get_params (log ratio, up-to-10 attempts with
`.item()` area and aspect draws, the size check, normal_ fill or the value
tensor, randint `.item()` offsets, the no-op fallback), and F.erase's
clone-unless-inplace slice assignment.
Simplified: 3x8x8 image, scale (0.1, 0.3).
"""
import math

import torch
from torch import nn


def erase(img, i: int, j: int, h: int, w: int, v, inplace: bool = False):
    if not inplace:
        img = img.clone()
    img[..., i : i + h, j : j + w] = v
    return img


class RandomErasing(nn.Module):
    def __init__(self, p=0.5, scale=(0.1, 0.3), ratio=(0.3, 3.3), value=0, inplace=False):
        super().__init__()
        self.p, self.scale, self.ratio, self.value, self.inplace = p, scale, ratio, value, inplace

    @staticmethod
    def get_params(img, scale, ratio, value=None):
        img_c, img_h, img_w = img.shape[-3], img.shape[-2], img.shape[-1]
        area = img_h * img_w
        log_ratio = torch.log(torch.tensor(ratio))
        for _ in range(10):
            erase_area = area * torch.empty(1).uniform_(scale[0], scale[1]).item()
            aspect_ratio = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
            h = int(round(math.sqrt(erase_area * aspect_ratio)))
            w = int(round(math.sqrt(erase_area / aspect_ratio)))
            if not (h < img_h and w < img_w):
                continue
            if value is None:
                v = torch.empty([img_c, h, w], dtype=torch.float32).normal_()
            else:
                v = torch.tensor(value)[:, None, None]
            i = torch.randint(0, img_h - h + 1, size=(1,)).item()
            j = torch.randint(0, img_w - w + 1, size=(1,)).item()
            return i, j, h, w, v
        return 0, 0, img_h, img_w, img

    def forward(self, img):
        if torch.rand(1) < self.p:
            if isinstance(self.value, (int, float)):
                value = [float(self.value)]
            elif isinstance(self.value, str):
                value = None
            elif isinstance(self.value, (list, tuple)):
                value = [float(v) for v in self.value]
            else:
                value = self.value
            if value is not None and len(value) not in (1, img.shape[-3]):
                raise ValueError(f"If value is a sequence, it should have either a single value or {img.shape[-3]} (number of input channels)")
            x, y, h, w, v = self.get_params(img, scale=self.scale, ratio=self.ratio, value=value)
            return erase(img, x, y, h, w, v, self.inplace)
        return img


eraser = torch.compile(RandomErasing(p=0.5, value="random"))


def make():
    return RandomErasing(p=0.6, value="random"), [(torch.ones(3, 8, 8),)]
