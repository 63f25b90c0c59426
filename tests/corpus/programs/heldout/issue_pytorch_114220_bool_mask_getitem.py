"""Boolean masking `t[t > 0.5]` under `fullgraph=True` fails on `aten.nonzero` (dynamic shape operator).

Source: https://github.com/pytorch/pytorch/issues/114220
Kept: the reporter's function and decorator verbatim.
Simplified: input shrunk from (3, 16, 16) to (3, 4, 4).
"""
import torch


@torch.compile(fullgraph=True)
def f(t):
    return t[t > 0.5]


def make():
    torch.manual_seed(0)
    return f._torchdynamo_orig_callable, [(torch.rand(3, 4, 4),)]
