"""torchvision MultiScaleRoIAlign scale setup: `float(tensor.log2().round())` and `.item()` on level bounds.

Source: pytorch/vision@v0.29.2:torchvision/ops/poolers.py:55-134
Kept: _infer_scale's per-dim loop with float(torch.tensor(...)), _setup_scales
with its max over image shapes and the two `.item()` calls, LevelMapper and
its call on box areas.
Simplified: the roi_align op itself is left out; LevelMapper is applied to boxes.
"""
import math

import torch
from torch import Tensor


class LevelMapper:
    def __init__(self, k_min: int, k_max: int, canonical_scale: int = 224, canonical_level: int = 4, eps: float = 1e-6):
        self.k_min = k_min
        self.k_max = k_max
        self.s0 = canonical_scale
        self.lvl0 = canonical_level
        self.eps = eps

    def __call__(self, boxlists: list) -> Tensor:
        s = torch.sqrt(torch.cat([(b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) for b in boxlists]))
        target_lvls = torch.floor(self.lvl0 + torch.log2(s / self.s0) + torch.tensor(self.eps, dtype=s.dtype))
        target_lvls = torch.clamp(target_lvls, min=self.k_min, max=self.k_max)
        return (target_lvls.to(torch.int64) - self.k_min).to(torch.int64)


def _infer_scale(feature: Tensor, original_size: list) -> float:
    size = feature.shape[-2:]
    possible_scales = []
    for s1, s2 in zip(size, original_size):
        approx_scale = float(s1) / float(s2)
        scale = 2 ** float(torch.tensor(approx_scale).log2().round())
        possible_scales.append(scale)
    return possible_scales[0]


def _setup_scales(features: list, image_shapes: list, canonical_scale: int, canonical_level: int):
    if not image_shapes:
        raise ValueError("images list should not be empty")
    max_x = 0
    max_y = 0
    for shape in image_shapes:
        max_x = max(shape[0], max_x)
        max_y = max(shape[1], max_y)
    original_input_shape = (max_x, max_y)
    scales = [_infer_scale(feat, original_input_shape) for feat in features]
    lvl_min = -torch.log2(torch.tensor(scales[0], dtype=torch.float32)).item()
    lvl_max = -torch.log2(torch.tensor(scales[-1], dtype=torch.float32)).item()
    map_levels = LevelMapper(int(lvl_min), int(lvl_max), canonical_scale=canonical_scale, canonical_level=canonical_level)
    return scales, map_levels


class RoIPoolerLevels(torch.nn.Module):
    def forward(self, f1, f2, boxes):
        scales, mapper = _setup_scales([f1, f2], [(32, 32)], 224, 4)
        return mapper([boxes]), scales[0] * f1.mean()


pooler = torch.compile(RoIPoolerLevels())


def make():
    torch.manual_seed(0)
    xy = torch.rand(5, 2) * 16
    boxes = torch.cat([xy, xy + 1 + torch.rand(5, 2) * 16], 1)
    return RoIPoolerLevels(), [(torch.rand(1, 4, 8, 8), torch.rand(1, 4, 4, 4), boxes)]
