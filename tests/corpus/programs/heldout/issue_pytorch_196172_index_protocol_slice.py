"""A user object implementing `__index__` used as a tensor slice bound, `x[:stop]`.

Source: https://github.com/pytorch/pytorch/issues/196172 (fix proposed in pytorch/pytorch#196296)
Kept: StaticIndex, `fn` and `compiled_fn = torch.compile(fn, backend="eager")` verbatim.
Simplified: prints dropped.
"""
import torch


class StaticIndex:
    def __init__(self, index):
        self.index = index

    def __index__(self):
        return self.index


def fn(x, stop):
    return x[:stop]


compiled_fn = torch.compile(fn, backend="eager")


def make():
    return fn, [(torch.arange(8), StaticIndex(2))]
