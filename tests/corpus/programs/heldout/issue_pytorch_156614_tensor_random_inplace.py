"""In-place `Tensor.random_(0, 2)` inside a fullgraph compiled function.

Source: https://github.com/pytorch/pytorch/issues/156614
The reporter's repro: `f(x)` does `x = x.random_(0, 2)` and returns it; compiled with
backend="eager", fullgraph=True and called on `torch.ones(1)`.
Kept: `f` and the compile call as posted.
Simplified: nothing (a second, 2x3 input is added).
"""
import torch

def f(x):
    x = x.random_(0, 2)
    return x

f = torch.compile(f, backend="eager", fullgraph=True)


def make():
    torch.manual_seed(0)
    return f._torchdynamo_orig_callable, [(torch.ones(1),), (torch.ones(2, 3),)]
