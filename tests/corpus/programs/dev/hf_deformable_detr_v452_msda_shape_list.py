"""Deformable DETR multi-scale deformable attention at v4.52.4: split sizes from `value_spatial_shapes_list` (Python ints), grid_sample per level (no break).

Source: huggingface/transformers@v4.52.4:src/transformers/models/deformable_detr/modeling_deformable_detr.py:55-106
Kept: the MultiScaleDeformableAttention module verbatim (the Python-list
spatial shapes drive split and reshape; the tensor shapes and level index are
passed but unused), as the model calls it from its attention layer.
Simplified: the hub-kernel decorator is dropped; 2 levels, 2 heads of 4.
"""
from typing import List, Tuple

import torch
from torch import Tensor, nn


class MultiScaleDeformableAttention(nn.Module):

    def forward(self, value: Tensor, value_spatial_shapes: Tensor, value_spatial_shapes_list: List[Tuple], level_start_index: Tensor, sampling_locations: Tensor, attention_weights: Tensor, im2col_step: int):
        batch_size, _, num_heads, hidden_dim = value.shape
        _, num_queries, num_heads, num_levels, num_points, _ = sampling_locations.shape
        value_list = value.split([height * width for height, width in value_spatial_shapes_list], dim=1)
        sampling_grids = 2 * sampling_locations - 1
        sampling_value_list = []
        for level_id, (height, width) in enumerate(value_spatial_shapes_list):
            value_l_ = value_list[level_id].flatten(2).transpose(1, 2).reshape(batch_size * num_heads, hidden_dim, height, width)
            sampling_grid_l_ = sampling_grids[:, :, :, level_id].transpose(1, 2).flatten(0, 1)
            sampling_value_l_ = nn.functional.grid_sample(value_l_, sampling_grid_l_, mode='bilinear', padding_mode='zeros', align_corners=False)
            sampling_value_list.append(sampling_value_l_)
        attention_weights = attention_weights.transpose(1, 2).reshape(batch_size * num_heads, 1, num_queries, num_levels * num_points)
        output = (torch.stack(sampling_value_list, dim=-2).flatten(-2) * attention_weights).sum(-1).view(batch_size, num_heads * hidden_dim, num_queries)
        return output.transpose(1, 2).contiguous()



msda = torch.compile(MultiScaleDeformableAttention())


def make():
    torch.manual_seed(0)
    shapes = [(4, 4), (2, 2)]
    value = torch.randn(1, 20, 2, 4)
    sampling_locations = torch.rand(1, 3, 2, 2, 2, 2)
    attention_weights = torch.softmax(torch.randn(1, 3, 2, 2, 2), -1)
    level_start_index = torch.tensor([0, 16])
    return MultiScaleDeformableAttention(), [(value, torch.tensor(shapes), shapes, level_start_index, sampling_locations, attention_weights, 64)]
