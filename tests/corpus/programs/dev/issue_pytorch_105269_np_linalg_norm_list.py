"""A compiled NumPy function returning `np.linalg.norm` of a Python list.

Source: https://github.com/pytorch/pytorch/issues/105269
The reporter's compile_norm.py: `func(x)` returns `np.linalg.norm(x)` and is called with
`[1, 2, 3]`; at the time this graph-broke for np.linalg functions.
Kept: `func` and its bare decorator, the list argument, the default-device line.
Simplified: the `numpy_ndarray_as_tensor` config flag of the old interop package is
gone (NumPy tracing is always on now); the unused matplotlib import is dropped;
a second call on an ndarray is added.
"""
import numpy as np

import torch
torch.set_default_device("cpu")


@torch.compile
def func(x):
    return np.linalg.norm(x)


def make():
    torch.manual_seed(0)
    return func._torchdynamo_orig_callable, [([1, 2, 3],), (np.array([3.0, 4.0]),)]
