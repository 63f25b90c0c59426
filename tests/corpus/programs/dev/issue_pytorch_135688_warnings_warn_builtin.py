"""A compiled function that calls warnings.warn: "Graph break due to unsupported Python builtin _warnings.warn".

Source: https://github.com/pytorch/pytorch/issues/135688
Kept: the repro's shape: a plain function `fn` that calls `warnings.warn("aaa")`,
compiled inside `repro()` with a bare `torch.compile(fn)`.
Simplified: `fn` takes a tensor and does a little work before and after the
warning so the frame has a graph to break (the original takes no argument).
"""
import warnings

import torch


def fn(x):
    y = x.sin()
    warnings.warn("aaa")
    return y + 1


def repro():
    compiled_fn = torch.compile(fn)
    compiled_fn(torch.randn(4))


def make():
    torch.manual_seed(0)
    return fn, [(torch.randn(4),)]
