"""`nn.init.trunc_normal_` called inside a compiled function (rejection loop).

Source: pytorch/pytorch#194768 (https://github.com/pytorch/pytorch/issues/194768)
Kept: the reporter's `fn(tensor)` returning
`nn.init.trunc_normal_(tensor, mean=0.0, std=1.0, a=-1.0, b=1.0)` and
`torch.compile(fn, backend="inductor", fullgraph=True)`.
Simplified: nothing (the harness compiles the eager `fn` itself).
"""
import torch
from torch import nn


def fn(tensor):
    return nn.init.trunc_normal_(
        tensor, mean=0.0, std=1.0, a=-1.0, b=1.0
    )


compiled = torch.compile(fn, backend="inductor", fullgraph=True)


def make():
    torch.manual_seed(0)
    return fn, [(torch.empty(8),)]
