"""flash-attn's maybe_align: `x if x.data_ptr() % alignment_in_bytes == 0 else x.clone()` in a compiled LayerNorm.

Source: https://github.com/pytorch/pytorch/issues/128071 (user empathy day, "based"; flash_attn/ops/layer_norm.py:13)
Kept: maybe_align as quoted in the issue's break list, called on the input,
weight and bias of a layer-norm helper the way dropout_add_layer_norm does,
inside a module compiled whole.
Simplified: the fused CUDA kernel is torch's layer_norm; alignment 16 bytes.
"""
import torch
import torch.nn.functional as F
from torch import nn


def maybe_align(x, alignment_in_bytes=16):
    """Assume that x already has last dim divisible by alignment_in_bytes"""
    # TD [2023-07-04] I'm not 100% sure that clone will align the memory
    # https://discuss.pytorch.org/t/how-to-ensure-that-tensor-data-ptr-is-aligned-to-16-bytes/183440
    return x if x.data_ptr() % alignment_in_bytes == 0 else x.clone()


def layer_norm_fn(x0, weight, bias, epsilon):
    x0 = maybe_align(x0.contiguous(), 16)
    weight = maybe_align(weight.contiguous(), 16)
    bias = maybe_align(bias.contiguous(), 16) if bias is not None else None
    return F.layer_norm(x0, x0.shape[-1:], weight, bias, epsilon)


class DropoutAddLayerNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.bias = nn.Parameter(torch.zeros(hidden_size))

    def forward(self, x0, residual=None):
        if residual is not None:
            x0 = x0 + residual
        return layer_norm_fn(x0, self.weight, self.bias, self.eps)


class Block(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.mixer = nn.Linear(d, d)
        self.norm = DropoutAddLayerNorm(d)

    def forward(self, hidden_states, residual=None):
        return self.norm(self.mixer(hidden_states), residual)


model = torch.compile(Block())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 8)
    return Block(), [(x, torch.randn(2, 3, 8)), (x[:, 1:], None)]
