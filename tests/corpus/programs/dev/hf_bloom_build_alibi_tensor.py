"""BLOOM build_alibi_tensor: slopes from Python math on the head count, positions from the mask's cumsum (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/bloom/modeling_bloom.py:45-89
Kept: _get_alibi_slopes (closest power of two, torch.full base, extra slopes
when the head count is not a power of two), build_alibi_tensor (cumsum - 1
times mask, reshape to (batch * heads, 1, seq)), and the baddbmm of alibi into
the attention scores as BloomAttention does.
Simplified: 6 heads (exercises the extra-slopes branch), head dim 2.
"""
import math

import torch
from torch import nn


def _get_alibi_slopes(num_heads: int, device: torch.device) -> torch.Tensor:
    closest_power_of_2 = 2 ** math.floor(math.log2(num_heads))
    base = torch.full((), 2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))), device=device, dtype=torch.float32)
    powers = torch.arange(1, 1 + closest_power_of_2, device=device, dtype=torch.int32)
    slopes = torch.pow(base, powers)
    if closest_power_of_2 != num_heads:
        extra_base = torch.full((), 2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3))), device=device, dtype=torch.float32)
        num_remaining_heads = min(closest_power_of_2, num_heads - closest_power_of_2)
        extra_powers = torch.arange(1, 1 + 2 * num_remaining_heads, 2, device=device, dtype=torch.int32)
        slopes = torch.cat([slopes, torch.pow(extra_base, extra_powers)], dim=0)
    return slopes


def build_alibi_tensor(attention_mask: torch.Tensor, num_heads: int, dtype: torch.dtype) -> torch.Tensor:
    batch_size, seq_length = attention_mask.shape
    slopes = _get_alibi_slopes(num_heads, attention_mask.device)
    arange_tensor = ((attention_mask.cumsum(dim=-1) - 1) * attention_mask)[:, None, :]
    alibi = slopes[..., None] * arange_tensor
    return alibi.reshape(batch_size * num_heads, 1, seq_length).to(dtype)


class BloomAttention(nn.Module):
    def __init__(self, hidden=12, num_heads=6):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden // num_heads
        self.query_key_value = nn.Linear(hidden, 3 * hidden)
        self.inv_norm_factor = 1.0 / math.sqrt(self.head_dim)
        self.beta = 1.0

    def forward(self, hidden_states, attention_mask):
        batch_size, q_length, _ = hidden_states.shape
        alibi = build_alibi_tensor(attention_mask, self.num_heads, dtype=hidden_states.dtype)
        fused = self.query_key_value(hidden_states).view(batch_size, q_length, self.num_heads, 3, self.head_dim)
        query, key, value = fused[..., 0, :], fused[..., 1, :], fused[..., 2, :]
        query = query.transpose(1, 2).reshape(batch_size * self.num_heads, q_length, self.head_dim)
        key = key.permute(0, 2, 3, 1).reshape(batch_size * self.num_heads, self.head_dim, q_length)
        value = value.transpose(1, 2).reshape(batch_size * self.num_heads, q_length, self.head_dim)
        attention_scores = alibi.baddbmm(batch1=query, batch2=key, beta=self.beta, alpha=self.inv_norm_factor)
        attn_weights = attention_scores.softmax(-1)
        return torch.bmm(attn_weights, value)


attention = torch.compile(BloomAttention())


def make():
    torch.manual_seed(0)
    return BloomAttention(), [(torch.randn(2, 4, 12), torch.tensor([[1, 1, 1, 1], [0, 1, 1, 1]]))]
