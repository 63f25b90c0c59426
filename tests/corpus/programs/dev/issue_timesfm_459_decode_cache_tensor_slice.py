"""TimesFM decode: `start = decode_cache.next_index[0]` (a tensor element) slices the KV cache write
`decode_cache.key[:, start:end] = key`, once per layer.

Source: https://github.com/google-research/timesfm/pull/459 (src/timesfm/torch/transformer.py:279 as quoted)
Kept: the cache object with `next_index`, the tensor-valued slice bounds and the in-place cache writes, and the
PR's compile entry `self.model.forward = torch.compile(self.model.forward)`.
Simplified: one attention layer that returns the updated cache mean; head dims are tiny.
"""
import torch
from torch import nn


class DecodeCache:
    def __init__(self, batch, max_len, dim):
        self.next_index = torch.zeros(batch, dtype=torch.long)
        self.key = torch.zeros(batch, max_len, dim)
        self.value = torch.zeros(batch, max_len, dim)


class Attention(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)

    def forward(self, x, decode_cache):
        key, value = self.k(x), self.v(x)
        start = decode_cache.next_index[0]
        end = start + x.shape[1]
        decode_cache.key[:, start:end] = key
        decode_cache.value[:, start:end] = value
        decode_cache.next_index += x.shape[1]
        return decode_cache.key[:, :end].mean(dim=1) + decode_cache.value[:, :end].mean(dim=1)


class TimesFMModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, x, decode_cache):
        return self.attn(x, decode_cache)


class TimesFM:
    def __init__(self, torch_compile=True):
        self.model = TimesFMModule()
        if torch_compile:
            self.model.forward = torch.compile(self.model.forward)


def make():
    torch.manual_seed(0)
    return TimesFMModule(), [(torch.randn(1, 2, 4), DecodeCache(1, 8, 4))]
