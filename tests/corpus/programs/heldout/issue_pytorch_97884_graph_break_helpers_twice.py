"""`g(x) = f(x) + f(x) + f2(x)` where both helpers call `torch._dynamo.graph_break()` between two adds.

Source: https://github.com/pytorch/pytorch/pull/97884 (the script in the description)
Kept: f, f2 and the decorated g verbatim.
Simplified: the removed `print_graph_breaks` config and the counters printout are dropped.
"""
import torch
import torch._dynamo


def f(x):
    y = x + 1
    torch._dynamo.graph_break()
    z = y + 1
    return z


def f2(x):
    y = x + 1
    torch._dynamo.graph_break()
    z = y + 1
    return z


@torch.compile()
def g(x):
    return f(x) + f(x) + f2(x)


def make():
    return g._torchdynamo_orig_callable, [(torch.randn(2),)]
