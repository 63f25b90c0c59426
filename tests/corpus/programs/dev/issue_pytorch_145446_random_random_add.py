"""`x + random.random()` in a compiled function.

Source: pytorch/pytorch#145446 (https://github.com/pytorch/pytorch/issues/145446)
Kept: the report's function under `@torch.compile(backend="eager", fullgraph=True)`
adding Python's `random.random()` to a tensor of ones.
Simplified: nothing.
"""
import random

import torch


@torch.compile(backend="eager", fullgraph=True)
def fn(x):
    return x + random.random()


def make():
    torch.manual_seed(0)
    return fn._torchdynamo_orig_callable, [(torch.ones(5, 5),)]
