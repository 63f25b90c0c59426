"""`warnings.warn("aaa")` as the whole body of a compiled function ("unsupported Python builtin _warnings.warn").

Source: https://github.com/pytorch/pytorch/issues/135688
Kept: `fn` and `repro()` with `compiled_fn = torch.compile(fn)` verbatim.
Simplified: `fn` takes and returns a tensor so the frame has graph work around the warning.
"""
import warnings

import torch


def fn(x):
    warnings.warn("aaa")
    return x + 1


def repro():
    compiled_fn = torch.compile(fn)
    compiled_fn(torch.ones(2))


def make():
    return fn, [(torch.ones(2),)]
