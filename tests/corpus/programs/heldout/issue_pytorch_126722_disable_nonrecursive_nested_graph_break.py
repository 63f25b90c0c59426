"""A `torch._dynamo.disable(recursive=False)` helper whose callee calls `graph_break()`.

Source: pytorch/pytorch#126722 (https://github.com/pytorch/pytorch/issues/126722)
Kept: the reporter's three functions: `f` calling `g`, `g` decorated with
`@torch._dynamo.disable(recursive=False)` calling `h`, `h` with an explicit
`torch._dynamo.graph_break()` between two adds, and
`torch.compile(f, backend="eager")` on a 3x3 input.
Simplified: nothing.
"""
import torch


def f(x):
    x = x + 1
    x = g(x)
    x = x + 1
    return x


@torch._dynamo.disable(recursive=False)
def g(x):
    x = x + 1
    x = h(x)
    x = x + 1
    return x


def h(x):
    x = x + 1
    torch._dynamo.graph_break()
    x = x + 1
    return x


opt_f = torch.compile(f, backend="eager")


def make():
    torch.manual_seed(0)
    return f, [(torch.randn(3, 3),)]
