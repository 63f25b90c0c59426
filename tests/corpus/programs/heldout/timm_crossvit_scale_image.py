"""timm CrossViT scale_image per branch: interpolate or center-crop decided on shape ints (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/models/crossvit.py:292-309,457-478
Kept: scale_image (the size comparison, crop_scale with Python round, bicubic
interpolate) and forward_features' loop over the branches' img sizes, patch
embeds, cls token cat and pos embed add.
Simplified: two branches (8 and 12 pixels) with conv patch embeds; dim 4.
"""
from typing import Tuple

import torch
from torch import nn


def scale_image(x, ss: Tuple[int, int], crop_scale: bool = False):
    H, W = x.shape[-2:]
    if H != ss[0] or W != ss[1]:
        if crop_scale and ss[0] <= H and ss[1] <= W:
            cu, cl = int(round((H - ss[0]) / 2.)), int(round((W - ss[1]) / 2.))
            x = x[:, :, cu:cu + ss[0], cl:cl + ss[1]]
        else:
            x = torch.nn.functional.interpolate(x, size=ss, mode='bicubic', align_corners=False)
    return x


class CrossVit(nn.Module):
    def __init__(self, img_size=(8, 12), patch_size=(4, 4), dim=4, crop_scale=True):
        super().__init__()
        self.img_size_scaled = [(s, s) for s in img_size]
        self.crop_scale = crop_scale
        self.num_branches = len(img_size)
        self.patch_embed = nn.ModuleList([nn.Conv2d(3, dim, p, p) for p in patch_size])
        self.cls_token = nn.ParameterList([nn.Parameter(torch.zeros(1, 1, dim)) for _ in img_size])
        self.pos_embed = nn.ParameterList([nn.Parameter(torch.randn(1, 1 + (s // p) ** 2, dim) * .02) for s, p in zip(img_size, patch_size)])

    def forward_features(self, x):
        B = x.shape[0]
        xs = []
        for i, patch_embed in enumerate(self.patch_embed):
            x_ = x
            ss = self.img_size_scaled[i]
            x_ = scale_image(x_, ss, self.crop_scale)
            x_ = patch_embed(x_).flatten(2).transpose(1, 2)
            cls_tokens = self.cls_token[i].expand(B, -1, -1)
            x_ = torch.cat((cls_tokens, x_), dim=1)
            x_ = x_ + self.pos_embed[i]
            xs.append(x_)
        return xs

    def forward(self, x):
        xs = self.forward_features(x)
        return torch.stack([x_[:, 0] for x_ in xs], dim=0).mean(0)


crossvit = torch.compile(CrossVit())


def make():
    torch.manual_seed(0)
    return CrossVit(), [(torch.randn(1, 3, 12, 12),), (torch.randn(1, 3, 10, 10),)]
