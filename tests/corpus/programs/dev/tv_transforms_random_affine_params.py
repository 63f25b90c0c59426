"""torchvision RandomAffine.get_params (v1): angle, translation, scale and shear each drawn with `float(torch.empty(1).uniform_(...).item())`.

Source: pytorch/vision@v0.29.2:torchvision/transforms/transforms.py:1481-1540
Kept: get_params verbatim (the translate / scale_ranges / shears optional
branches, int(round(...)) translations, the 4-element shear case) and forward
building the affine matrix and applying it with affine_grid / grid_sample.
Simplified: F.affine is replaced by a 2x3 rotation-scale-translation matrix
through affine_grid (no shear application).
"""
import math

import torch
import torch.nn.functional as F


class RandomAffine(torch.nn.Module):
    def __init__(self, degrees, translate=None, scale=None, shear=None):
        super().__init__()
        self.degrees = [-degrees, degrees]
        self.translate = translate
        self.scale = scale
        self.shear = shear

    @staticmethod
    def get_params(degrees, translate, scale_ranges, shears, img_size):
        angle = float(torch.empty(1).uniform_(float(degrees[0]), float(degrees[1])).item())
        if translate is not None:
            max_dx = float(translate[0] * img_size[0])
            max_dy = float(translate[1] * img_size[1])
            tx = int(round(torch.empty(1).uniform_(-max_dx, max_dx).item()))
            ty = int(round(torch.empty(1).uniform_(-max_dy, max_dy).item()))
            translations = (tx, ty)
        else:
            translations = (0, 0)
        if scale_ranges is not None:
            scale = float(torch.empty(1).uniform_(scale_ranges[0], scale_ranges[1]).item())
        else:
            scale = 1.0
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = float(torch.empty(1).uniform_(shears[0], shears[1]).item())
            if len(shears) == 4:
                shear_y = float(torch.empty(1).uniform_(shears[2], shears[3]).item())
        shear = (shear_x, shear_y)
        return angle, translations, scale, shear

    def forward(self, img):
        height, width = img.shape[-2:]
        img_size = [width, height]
        angle, (tx, ty), scale, shear = self.get_params(self.degrees, self.translate, self.scale, self.shear, img_size)
        rad = math.radians(angle)
        theta = torch.tensor([[math.cos(rad) * scale, -math.sin(rad) * scale, 2 * tx / width],
                              [math.sin(rad) * scale, math.cos(rad) * scale, 2 * ty / height]], dtype=img.dtype)
        grid = F.affine_grid(theta[None], [1, *img.shape], align_corners=False)
        return F.grid_sample(img[None], grid, align_corners=False)[0]


affine = torch.compile(RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=(-5, 5, -5, 5)))


def make():
    torch.manual_seed(0)
    return RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1), shear=(-5, 5, -5, 5)), [(torch.rand(3, 6, 6),)]
