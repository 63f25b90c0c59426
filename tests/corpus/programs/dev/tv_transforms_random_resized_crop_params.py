"""torchvision RandomResizedCrop.get_params (v1): ten attempts of `.item()` area/aspect draws and randint offsets, then resize.

Source: pytorch/vision@v0.29.2:torchvision/transforms/transforms.py:929-990
Kept: get_params verbatim (get_dimensions, log ratio, the attempt loop with
`.item()`, int(round(math.sqrt(...))), the 0 < w <= width check, the
center-crop fallback by in_ratio) and forward's resized_crop as crop +
bilinear interpolate with antialias.
Simplified: output 4x4 from a 3x8x6 image.
"""
import math

import torch
from torch import nn


def get_dimensions(img):
    channels = 1 if img.ndim == 2 else img.shape[-3]
    height, width = img.shape[-2:]
    return [channels, height, width]


class RandomResizedCrop(nn.Module):
    def __init__(self, size=(4, 4), scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0)):
        super().__init__()
        self.size, self.scale, self.ratio = size, scale, ratio

    @staticmethod
    def get_params(img, scale, ratio):
        _, height, width = get_dimensions(img)
        area = height * width
        log_ratio = torch.log(torch.tensor(ratio))
        for _ in range(10):
            target_area = area * torch.empty(1).uniform_(scale[0], scale[1]).item()
            aspect_ratio = torch.exp(torch.empty(1).uniform_(log_ratio[0], log_ratio[1])).item()
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                i = torch.randint(0, height - h + 1, size=(1,)).item()
                j = torch.randint(0, width - w + 1, size=(1,)).item()
                return i, j, h, w
        in_ratio = float(width) / float(height)
        if in_ratio < min(ratio):
            w = width
            h = int(round(w / min(ratio)))
        elif in_ratio > max(ratio):
            h = height
            w = int(round(h * max(ratio)))
        else:
            w = width
            h = height
        i = (height - h) // 2
        j = (width - w) // 2
        return i, j, h, w

    def forward(self, img):
        i, j, h, w = self.get_params(img, self.scale, self.ratio)
        img = img[..., i : i + h, j : j + w]
        return torch.nn.functional.interpolate(img[None], size=self.size, mode="bilinear", align_corners=False, antialias=True)[0]


crop = torch.compile(RandomResizedCrop())


def make():
    torch.manual_seed(0)
    return RandomResizedCrop(), [(torch.rand(3, 8, 6),)]
