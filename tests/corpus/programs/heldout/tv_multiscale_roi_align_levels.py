"""torchvision _multiscale_roi_align: per-level `torch.where(levels == level)[0]` and masked result writes.

Source: pytorch/vision@v0.29.2:torchvision/ops/poolers.py:47-84,147-227
Kept: the scales/mapper ValueError, _convert_to_roi_format, the single-level
shortcut, LevelMapper, the zeros result of (num_rois, C, *output_size), the
level loop with where/index, the tracing switch, `result[idx] = ...`.
Simplified: roi_align (a C++ op) is replaced by an adaptive average pool of
each box's feature mean; 2 levels, 4 channels.
"""
import torch
from torch import Tensor


def _is_tracing():
    return torch._C._get_tracing_state() is not None


def _convert_to_roi_format(boxes):
    concat_boxes = torch.cat(boxes, dim=0)
    device, dtype = concat_boxes.device, concat_boxes.dtype
    ids = torch.cat([torch.full_like(b[:, :1], i, dtype=dtype, layout=torch.strided, device=device) for i, b in enumerate(boxes)], dim=0)
    return torch.cat([ids, concat_boxes], dim=1)


def roi_align(features, rois, output_size, spatial_scale, sampling_ratio):
    pooled = torch.nn.functional.adaptive_avg_pool2d(features, output_size)
    return pooled[rois[:, 0].long()] * spatial_scale


class LevelMapper:
    def __init__(self, k_min, k_max, canonical_scale=224, canonical_level=4, eps=1e-6):
        self.k_min, self.k_max, self.s0, self.lvl0, self.eps = k_min, k_max, canonical_scale, canonical_level, eps

    def __call__(self, boxlists):
        s = torch.sqrt(torch.cat([(b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1]) for b in boxlists]))
        target_lvls = torch.floor(self.lvl0 + torch.log2(s / self.s0) + torch.tensor(self.eps, dtype=s.dtype))
        target_lvls = torch.clamp(target_lvls, min=self.k_min, max=self.k_max)
        return (target_lvls.to(torch.int64) - self.k_min).to(torch.int64)


def _multiscale_roi_align(x_filtered, boxes, output_size, sampling_ratio, scales, mapper):
    if scales is None or mapper is None:
        raise ValueError("scales and mapper should not be None")
    num_levels = len(x_filtered)
    rois = _convert_to_roi_format(boxes)
    if num_levels == 1:
        return roi_align(x_filtered[0], rois, output_size=output_size, spatial_scale=scales[0], sampling_ratio=sampling_ratio)
    levels = mapper(boxes)
    num_rois = len(rois)
    num_channels = x_filtered[0].shape[1]
    dtype, device = x_filtered[0].dtype, x_filtered[0].device
    result = torch.zeros((num_rois, num_channels) + output_size, dtype=dtype, device=device)
    tracing_results = []
    for level, (per_level_feature, scale) in enumerate(zip(x_filtered, scales)):
        idx_in_level = torch.where(levels == level)[0]
        rois_per_level = rois[idx_in_level]
        result_idx_in_level = roi_align(per_level_feature, rois_per_level, output_size=output_size, spatial_scale=scale, sampling_ratio=sampling_ratio)
        if _is_tracing():
            tracing_results.append(result_idx_in_level.to(dtype))
        else:
            result[idx_in_level] = result_idx_in_level.to(result.dtype)
    return result


class MultiScaleRoIAlign(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.output_size = (2, 2)
        self.scales = [0.25, 0.125]
        self.map_levels = LevelMapper(2, 3, canonical_scale=16, canonical_level=2)

    def forward(self, f0, f1, boxes):
        return _multiscale_roi_align([f0, f1], boxes, self.output_size, 2, self.scales, self.map_levels)


box_roi_pool = torch.compile(MultiScaleRoIAlign())


def make():
    torch.manual_seed(0)
    boxes = [torch.tensor([[0.0, 0.0, 4.0, 4.0], [0.0, 0.0, 30.0, 30.0]]), torch.tensor([[2.0, 2.0, 10.0, 12.0]])]
    return MultiScaleRoIAlign(), [(torch.randn(2, 4, 8, 8), torch.randn(2, 4, 4, 4), boxes)]
