"""depyf's toy example: `np.zeros` next to tensor math and `if b.sum() < 0:` with both branches doing work.

Source: https://github.com/thuml/depyf/issues/29
Kept: `toy_example` with `@torch.compile(backend="eager", dynamic=True)`, the numpy buffer `y`, both branches.
Simplified: the reporter's `fn1` lives in an unshown module; it is dropped, so `res` is not returned.
"""
import numpy as np
import torch


@torch.compile(backend="eager", dynamic=True)
def toy_example(a, b):
    y = np.zeros((10, ))
    x = a / (torch.abs(a) + 1)
    if b.sum() < 0:  # graph break
        b = b * -1
        b = torch.pow(b, 2)
    else:            # graph break
        b = b * 2
        b = torch.pow(b, 2)
    return x * b, y


def make():
    return toy_example._torchdynamo_orig_callable, [(torch.ones(10), torch.ones(10)), (torch.ones(10), -torch.ones(10))]
