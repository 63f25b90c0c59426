"""Compiled NumPy code: `x.astype(int)` on an ndarray argument.

Source: pytorch/pytorch#105052 (https://github.com/pytorch/pytorch/issues/105052)
Kept: the reporter's `@torch.compile` function `f(x)` returning
`x.astype(int)` for a float64 NumPy array of ones, and
`torch.set_default_device("cpu")`.
Simplified: the old `cfg.numpy_ndarray_as_tensor = True` switch (NumPy tracing
is on by default now, the flag is gone) is left out.
"""
import numpy as np
import torch

torch.set_default_device("cpu")


@torch.compile
def f(x):
    y = x.astype(int)
    return y


def make():
    x = np.ones(3, dtype='float64')
    return f._torchdynamo_orig_callable, [(x,)]
