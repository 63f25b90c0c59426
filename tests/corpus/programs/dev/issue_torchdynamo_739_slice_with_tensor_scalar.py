"""Slicing with a 0-d tensor: `idx = y[0]; out = x[idx:]` (the slice bound needs the tensor's value).

Source: https://github.com/pytorch/torchdynamo/issues/739 (graph break added by pytorch/torchdynamo#1125)
Kept: `forward(y)` verbatim; the 2022 `torchdynamo.optimize("aot_nop")` context becomes `torch.compile`.
Simplified: nothing.
"""
import torch


def forward(y):
    x = torch.ones(8)
    idx = y[0]
    out = x[idx:]
    return out


opt_forward = torch.compile(forward, backend="aot_eager")


def make():
    return forward, [(torch.ones(8, dtype=torch.long),)]
