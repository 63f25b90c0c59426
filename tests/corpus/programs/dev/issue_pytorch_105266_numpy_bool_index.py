"""Compiled NumPy boolean indexing `Z[I]` graph-breaks on `aten.nonzero`.

Source: https://github.com/pytorch/pytorch/issues/105266
Kept: the reporter's `idx(Z, I)` with `@torch.compile`, NumPy inputs built the same way.
Simplified: the removed `cfg.numpy_ndarray_as_tensor` flag (NumPy tracing is on by default now) and
`torch.set_default_device("cpu")` are dropped.
"""
import numpy as np
import torch


@torch.compile
def idx(Z, I):
    return Z[I]


def make():
    Z = np.arange(12)
    I = np.arange(12) % 2 == 0
    return idx._torchdynamo_orig_callable, [(Z, I)]
