"""`u0, u1 = a.tolist()` then `a * u0 * u1` with capture_scalar_outputs=False.

Source: https://github.com/pytorch/pytorch/issues/163798
Kept: the repro verbatim (`@torch.compile(fullgraph=False, backend="eager")`,
tolist unpacked into two Python numbers used to scale the tensor) and its
contrast function using `.item()`.
Simplified: the two functions are called from one entry so both are measured.
"""
import torch


@torch.compile(fullgraph=False, backend="eager")
def func(a):
    u0, u1 = a.tolist()
    return a * u0 * u1


@torch.compile(fullgraph=False, backend="eager")
def func2(a):
    u0 = a.item()
    return a * u0


_func = func._torchdynamo_orig_callable
_func2 = func2._torchdynamo_orig_callable


def both(a, b):
    return _func(a), _func2(b)


def make():
    torch.manual_seed(0)
    return both, [(torch.tensor([1, 2]), torch.tensor([3]))]
