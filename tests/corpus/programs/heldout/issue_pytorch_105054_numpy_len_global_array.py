"""Compiled NumPy code: `x.sum() / len(x)` on a module-level ndarray.

Source: pytorch/pytorch#105054 (https://github.com/pytorch/pytorch/issues/105054)
Kept: the reporter's module-level `y_glob = np.array([[1, 2, 3], [4, 5, 6]])`
and the `@torch.compile` function `av(x)` computing `x.sum() / len(x)`, called
on it, with `torch.set_default_device("cpu")`.
Simplified: the old `cfg.numpy_ndarray_as_tensor = True` switch is left out
(NumPy tracing is on by default now).
"""
import numpy as np
import torch

torch.set_default_device("cpu")

y_glob = np.array([[1, 2, 3], [4, 5, 6]])


@torch.compile
def av(x):
    v = x.sum() / len(x)
    return v


def make():
    return av._torchdynamo_orig_callable, [(y_glob,)]
