"""`x.__getitem__([1, 2])` called as a method inside a compiled function (the form that works).

Source: https://github.com/pytorch/pytorch/issues/106648
Kept: the first `foo` of the report with `@torch.compile()` verbatim.
Simplified: the report's second variant calls `torch.Tensor.__getitem__([1, 2])` without the tensor and raises
in eager too, so it is not translated.
"""
import torch


@torch.compile()
def foo(x):
    return x.__getitem__([1, 2])


def make():
    torch.manual_seed(0)
    return foo._torchdynamo_orig_callable, [(torch.rand([5, 5, 5]),)]
