"""Multiscale deformable attention at v4.52.4 (rtdetr_v2): the same spatial-shapes check is skipped under `is_torchdynamo_compiling()` (no break expected).

Source: huggingface/transformers@v4.52.4:src/transformers/models/rt_detr_v2/modeling_rt_detr_v2.py:163-222
Kept: the forward's position-embedding add, shape unpacking, the ValueError
check on the spatial-shapes tensor, value projection with the attention-mask
masked_fill, sampling offsets / attention weights views, softmax, the
reference-points 2 / 4 / ValueError switch, and output projection.
Simplified: the deformable sampling kernel is a weighted mean of the values
per level (Python list of shapes); d_model 8, 2 heads, 2 levels, 1 point.
"""
import torch
import torch.nn.functional as F
from torch import nn


def is_torchdynamo_compiling():
    return torch.compiler.is_compiling()


def sample_levels(value, spatial_shapes_list, attention_weights):
    per_level = value.split([h * w for h, w in spatial_shapes_list], dim=1)
    pooled = torch.stack([v.mean(1) for v in per_level], dim=1)
    weights = attention_weights.mean(1).view(attention_weights.shape[0], attention_weights.shape[2], len(spatial_shapes_list), -1).mean(-1)
    return (pooled * weights.transpose(1, 2)[..., None]).sum(1).flatten(1)


class MultiscaleDeformableAttention(nn.Module):
    def __init__(self, d_model=8, n_heads=2, n_levels=2, n_points=1):
        super().__init__()
        self.d_model, self.n_heads, self.n_levels, self.n_points = d_model, n_heads, n_levels, n_points
        self.sampling_offsets = nn.Linear(d_model, n_heads * n_levels * n_points * 2)
        self.attention_weights = nn.Linear(d_model, n_heads * n_levels * n_points)
        self.value_proj = nn.Linear(d_model, d_model)
        self.output_proj = nn.Linear(d_model, d_model)

    def forward(self, hidden_states, attention_mask=None, encoder_hidden_states=None, position_embeddings=None,
                reference_points=None, spatial_shapes=None, spatial_shapes_list=None):
        if position_embeddings is not None:
            hidden_states = hidden_states + position_embeddings
        batch_size, num_queries, _ = hidden_states.shape
        batch_size, sequence_length, _ = encoder_hidden_states.shape
        if not is_torchdynamo_compiling() and (spatial_shapes[:, 0] * spatial_shapes[:, 1]).sum() != sequence_length:
            raise ValueError("Make sure to align the spatial shapes with the sequence length of the encoder hidden states")
        value = self.value_proj(encoder_hidden_states)
        if attention_mask is not None:
            value = value.masked_fill(~attention_mask[..., None], float(0))
        value = value.view(batch_size, sequence_length, self.n_heads, self.d_model // self.n_heads)
        sampling_offsets = self.sampling_offsets(hidden_states).view(batch_size, num_queries, self.n_heads, self.n_levels, self.n_points, 2)
        attention_weights = self.attention_weights(hidden_states).view(batch_size, num_queries, self.n_heads, self.n_levels * self.n_points)
        attention_weights = F.softmax(attention_weights, -1)
        if reference_points.shape[-1] == 2:
            offset_normalizer = torch.stack([spatial_shapes[..., 1], spatial_shapes[..., 0]], -1)
            sampling_locations = reference_points[:, :, None, :, None, :] + sampling_offsets / offset_normalizer[None, None, None, :, None, :]
        elif reference_points.shape[-1] == 4:
            sampling_locations = reference_points[:, :, None, :, None, :2] + sampling_offsets * reference_points[:, :, None, :, None, 2:] * 0.5
        else:
            raise ValueError(f"Last dim of reference_points must be 2 or 4, but got {reference_points.shape[-1]}")
        output = sample_levels(value, spatial_shapes_list, attention_weights) + sampling_locations.mean()
        output = self.output_proj(output)
        return output, attention_weights


attn = torch.compile(MultiscaleDeformableAttention())


def make():
    torch.manual_seed(0)
    shapes_list = [(2, 2), (1, 2)]
    shapes = torch.tensor(shapes_list)
    enc = torch.randn(1, 6, 8)
    q = torch.randn(1, 3, 8)
    return MultiscaleDeformableAttention(), [
        (q, None, enc, None, torch.rand(1, 3, 2, 2), shapes, shapes_list),
        (q, torch.ones(1, 6, dtype=torch.bool), enc, torch.randn(1, 3, 8), torch.rand(1, 3, 2, 4), shapes, shapes_list),
    ]
