"""torchvision ColorJitter (v1): `float(torch.empty(1).uniform_(...))` factors and a loop over `torch.randperm(4)` ids.

Source: pytorch/vision@v0.29.2:torchvision/transforms/transforms.py:1237-1290; torchvision/transforms/_functional_tensor.py:adjust_brightness,adjust_contrast,_blend
Kept: get_params (randperm order, float() of uniform draws for each optional
factor) and forward's loop `for fn_id in fn_idx:` with `fn_id == k and factor
is not None` dispatch; adjust_brightness / adjust_contrast through _blend with
the float-image bound.
Simplified: saturation and hue are None; 3x4x4 image.
"""
import torch
from torch import nn


def _blend(img1, img2, ratio: float):
    ratio = float(ratio)
    bound = 1.0 if img1.is_floating_point() else 255.0
    return (ratio * img1 + (1.0 - ratio) * img2).clamp(0, bound).to(img1.dtype)


def adjust_brightness(img, brightness_factor: float):
    if brightness_factor < 0:
        raise ValueError(f"brightness_factor ({brightness_factor}) is not non-negative.")
    return _blend(img, torch.zeros_like(img), brightness_factor)


def adjust_contrast(img, contrast_factor: float):
    if contrast_factor < 0:
        raise ValueError(f"contrast_factor ({contrast_factor}) is not non-negative.")
    mean = torch.mean((0.2989 * img[0] + 0.587 * img[1] + 0.114 * img[2]), dim=(-2, -1), keepdim=True)
    return _blend(img, mean, contrast_factor)


class ColorJitter(nn.Module):
    def __init__(self, brightness=0.4, contrast=0.4):
        super().__init__()
        self.brightness = [max(0, 1 - brightness), 1 + brightness]
        self.contrast = [max(0, 1 - contrast), 1 + contrast]
        self.saturation = None
        self.hue = None

    @staticmethod
    def get_params(brightness, contrast, saturation, hue):
        fn_idx = torch.randperm(4)
        b = None if brightness is None else float(torch.empty(1).uniform_(brightness[0], brightness[1]))
        c = None if contrast is None else float(torch.empty(1).uniform_(contrast[0], contrast[1]))
        s = None if saturation is None else float(torch.empty(1).uniform_(saturation[0], saturation[1]))
        h = None if hue is None else float(torch.empty(1).uniform_(hue[0], hue[1]))
        return fn_idx, b, c, s, h

    def forward(self, img):
        fn_idx, brightness_factor, contrast_factor, saturation_factor, hue_factor = self.get_params(self.brightness, self.contrast, self.saturation, self.hue)
        for fn_id in fn_idx:
            if fn_id == 0 and brightness_factor is not None:
                img = adjust_brightness(img, brightness_factor)
            elif fn_id == 1 and contrast_factor is not None:
                img = adjust_contrast(img, contrast_factor)
        return img


jitter = torch.compile(ColorJitter())


def make():
    torch.manual_seed(0)
    return ColorJitter(), [(torch.rand(3, 4, 4),)]
