"""A compiled function seeds a fresh `torch.Generator` and the global RNG, then draws from both; compiled and eager disagree.

Source: https://github.com/pytorch/pytorch/issues/118735
Kept: the reporter's `func` verbatim (a `torch.Generator().manual_seed(42)` used for one
`torch.rand`, then `torch.manual_seed(42)` and a draw from the default generator) and
`opt_func = torch.compile(func)`.
Simplified: the script's prints of eager vs compiled outputs are dropped.
"""
import torch


def func():
    g = torch.Generator().manual_seed(42)
    t1 = torch.rand(1, generator=g)
    torch.manual_seed(42)
    t2 = torch.rand(1)
    return t1, t2


opt_func = torch.compile(func)


def make():
    torch.manual_seed(0)
    return func, [()]
