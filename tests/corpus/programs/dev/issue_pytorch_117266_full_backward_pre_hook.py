"""A module with a full backward pre-hook (doubling grad_output) called from a `fullgraph=True` compiled function.

Source: https://github.com/pytorch/pytorch/issues/117266
Kept: the report's repro: a bias-free Linear(3, 3) whose weight is replaced by
an identity Parameter, a `register_full_backward_pre_hook` that returns
`tuple(go * 2 for go in grad_output)`, and `f(x) = layer(x)` compiled with
`backend="eager", fullgraph=True`; the gradient is taken outside.
Simplified: the backward call sits in a `run` helper (the harness runs the
forward); the maintainers point to compiled autograd, which this default
compile does not enable.
"""
import torch
import torch.nn as nn

layer = nn.Linear(3, 3, bias=False)
layer.weight = nn.Parameter(torch.eye(3, dtype=torch.float))


def hook(module, grad_output):
    return tuple(go * 2 for go in grad_output)


@torch.compile(backend="eager", fullgraph=True)
def f(x):
    y = layer(x)
    return y


layer.register_full_backward_pre_hook(hook)


def run(x):
    y = f(x)
    y.sum().backward()
    return x.grad


def make():
    torch.manual_seed(0)
    x = torch.randn(3, requires_grad=True)
    return f._torchdynamo_orig_callable, [(x,)]
