"""`torch.nonzero(x)` split into row and column index tensors in a compiled helper (a reported wrong-result case on older releases).

Source: https://github.com/pytorch/pytorch/issues/155324
Kept: the reporter's non_zero(x) returning (tmps[:,0], tmps[:,1]) and the
6x2 integer input built with torch.from_numpy from a NumPy array.
Simplified: a second input with no zero entries and one all-zero input.
"""
import numpy as np
import torch

arr3 = np.array([
    [0, 1],
    [2, 0],
    [3, 4],
    [0, 0],
    [5, 0],
    [0, 6],
])


def non_zero(x):
    tmps = torch.nonzero(x)
    return (tmps[:, 0], tmps[:, 1])


compiled_non_zero = torch.compile(non_zero)


def make():
    tensor0 = torch.from_numpy(arr3)
    return non_zero, [(tensor0,), (tensor0 + 1,), (torch.zeros(3, 2, dtype=torch.int64),)]
