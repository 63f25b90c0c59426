"""A `torch.set_grad_enabled(True)` object created before a graph break and entered after it.

Source: pytorch/pytorch#124900 (https://github.com/pytorch/pytorch/issues/124900)
The reporter's repro crashed Dynamo when the context-manager object crossed the explicit break.
Kept: `f` and `torch.compile(f, backend='eager')` as posted.
Simplified: nothing.
"""
import torch


def f(x):
    ctx = torch.set_grad_enabled(True)

    torch._dynamo.graph_break()

    with ctx:
        x = x + 1
    return x


opt_f = torch.compile(f, backend='eager')


def make():
    torch.manual_seed(0)
    return f, [(torch.randn(3, 3),)]
