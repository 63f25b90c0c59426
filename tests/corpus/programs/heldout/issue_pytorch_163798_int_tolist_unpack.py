"""`u0, u1 = a.tolist()` on an integer tensor, then scaling by both values.

Source: https://github.com/pytorch/pytorch/issues/163798 (fixed by pytorch/pytorch#163807: tolist now graph
breaks when capture_scalar_outputs is False)
Kept: `func` and its decorator `@torch.compile(fullgraph=False, backend="eager")` verbatim.
Simplified: nothing.
"""
import torch


@torch.compile(fullgraph=False, backend="eager")
def func(a):
    u0, u1 = a.tolist()
    return a*u0*u1


def make():
    return func._torchdynamo_orig_callable, [(torch.tensor([1, 2]),)]
