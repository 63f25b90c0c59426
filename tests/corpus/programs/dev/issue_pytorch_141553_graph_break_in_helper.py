"""An explicit `torch._dynamo.graph_break()` one call below the compiled function.

Source: https://github.com/pytorch/pytorch/pull/141553 (test.py in the description)
Kept: fn002/fn001 verbatim and `torch.compile(fn001, backend="eager")`.
Simplified: nothing.
"""
import torch


def fn002(x):
    x = x + 1
    torch._dynamo.graph_break()
    x = x + 1
    return x


def fn001(x):
    return fn002(x)


compiled = torch.compile(fn001, backend="eager")


def make():
    return fn001, [(torch.randn(1),)]
