"""T5 relative attention bias: `_relative_position_bucket` (torch.where over is_small, math.log constants) and compute_bias with past_seen_tokens (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/t5/modeling_t5.py:217-279
Kept: _relative_position_bucket verbatim (static method, bidirectional branch
on a Python bool, integer bucket math), compute_bias with the device default
from the embedding weight, and the is_decoder plumbing from config.
Simplified: the attention is only the bias computation plus a softmax over
random scores; 2 heads, 8 buckets.
"""
import math

import torch
from torch import nn


class T5Config:
    relative_attention_num_buckets = 8
    relative_attention_max_distance = 16
    num_heads = 2
    is_decoder = False


class T5Attention(nn.Module):
    def __init__(self, config, has_relative_attention_bias=True):
        super().__init__()
        self.is_decoder = config.is_decoder
        self.has_relative_attention_bias = has_relative_attention_bias
        self.relative_attention_num_buckets = config.relative_attention_num_buckets
        self.relative_attention_max_distance = config.relative_attention_max_distance
        self.n_heads = config.num_heads
        if self.has_relative_attention_bias:
            self.relative_attention_bias = nn.Embedding(self.relative_attention_num_buckets, self.n_heads)

    @staticmethod
    def _relative_position_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        relative_buckets = 0
        if bidirectional:
            num_buckets //= 2
            relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
            relative_position = torch.abs(relative_position)
        else:
            relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))

        max_exact = num_buckets // 2
        is_small = relative_position < max_exact

        relative_position_if_large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).to(torch.long)
        relative_position_if_large = torch.min(
            relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
        )

        relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
        return relative_buckets

    def compute_bias(self, query_length, key_length, device=None, past_seen_tokens=0):
        """Compute binned relative position bias"""
        if device is None:
            device = self.relative_attention_bias.weight.device
        context_position = torch.arange(query_length, dtype=torch.long, device=device)[:, None] + past_seen_tokens
        memory_position = torch.arange(key_length, dtype=torch.long, device=device)[None, :]
        relative_position = memory_position - context_position
        relative_position_bucket = self._relative_position_bucket(
            relative_position,
            bidirectional=(not self.is_decoder),
            num_buckets=self.relative_attention_num_buckets,
            max_distance=self.relative_attention_max_distance,
        )
        values = self.relative_attention_bias(relative_position_bucket)
        values = values.permute([2, 0, 1]).unsqueeze(0)
        return values

    def forward(self, scores, position_bias=None, past_seen_tokens=0):
        query_length, key_length = scores.shape[-2:]
        if position_bias is None:
            if not self.has_relative_attention_bias:
                position_bias = torch.zeros((1, self.n_heads, query_length, key_length), dtype=scores.dtype)
            else:
                position_bias = self.compute_bias(query_length, key_length, past_seen_tokens=past_seen_tokens)
        return torch.softmax(scores + position_bias, dim=-1), position_bias


def build(config):
    return torch.compile(T5Attention(config), mode="max-autotune-no-cudagraphs")


def make():
    torch.manual_seed(0)
    return T5Attention(T5Config()), [(torch.randn(1, 2, 5, 20),), (torch.randn(1, 2, 1, 9), None, 8)]
