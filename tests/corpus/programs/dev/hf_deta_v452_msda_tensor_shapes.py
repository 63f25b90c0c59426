"""DETA multi-scale deformable attention (pure-PyTorch path, v4.52.4 deprecated model): `value.split([h.item() * w.item() for h, w in value_spatial_shapes])` over a tensor.

Source: huggingface/transformers@v4.52.4:src/transformers/models/deprecated/deta/modeling_deta.py:526-560
Kept: multi_scale_deformable_attention verbatim: iterating the spatial-shapes
TENSOR gives 0-d tensors whose `.item()` products size the split, and they reshape the
per-level values before grid_sample.
Simplified: 2 levels (4x4, 2x2), 2 heads of 4, 3 queries, 2 points.
"""
import torch
from torch import Tensor, nn


def multi_scale_deformable_attention(value: Tensor, value_spatial_shapes: Tensor, sampling_locations: Tensor, attention_weights: Tensor) -> Tensor:
    batch_size, _, num_heads, hidden_dim = value.shape
    _, num_queries, num_heads, num_levels, num_points, _ = sampling_locations.shape
    value_list = value.split([height.item() * width.item() for height, width in value_spatial_shapes], dim=1)
    sampling_grids = 2 * sampling_locations - 1
    sampling_value_list = []
    for level_id, (height, width) in enumerate(value_spatial_shapes):
        value_l_ = value_list[level_id].flatten(2).transpose(1, 2).reshape(batch_size * num_heads, hidden_dim, height, width)
        sampling_grid_l_ = sampling_grids[:, :, :, level_id].transpose(1, 2).flatten(0, 1)
        sampling_value_l_ = nn.functional.grid_sample(value_l_, sampling_grid_l_, mode='bilinear', padding_mode='zeros', align_corners=False)
        sampling_value_list.append(sampling_value_l_)
    attention_weights = attention_weights.transpose(1, 2).reshape(batch_size * num_heads, 1, num_queries, num_levels * num_points)
    output = (torch.stack(sampling_value_list, dim=-2).flatten(-2) * attention_weights).sum(-1).view(batch_size, num_heads * hidden_dim, num_queries)
    return output.transpose(1, 2).contiguous()



class DetaMultiscaleDeformableAttention(nn.Module):
    def forward(self, value, value_spatial_shapes, sampling_locations, attention_weights):
        return multi_scale_deformable_attention(value, value_spatial_shapes, sampling_locations, attention_weights)


attn = torch.compile(DetaMultiscaleDeformableAttention())


def make():
    torch.manual_seed(0)
    shapes = [(4, 4), (2, 2)]
    value = torch.randn(1, 20, 2, 4)
    sampling_locations = torch.rand(1, 3, 2, 2, 2, 2)
    attention_weights = torch.softmax(torch.randn(1, 3, 2, 2, 2), -1)
    level_start_index = torch.tensor([0, 16])
    return DetaMultiscaleDeformableAttention(), [(value, torch.tensor(shapes), sampling_locations, attention_weights)]
