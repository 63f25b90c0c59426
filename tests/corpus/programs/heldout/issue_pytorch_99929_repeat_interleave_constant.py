"""`a.repeat_interleave(repeats=10, dim=0)` with a constant repeat count next to `a.repeat(10, 1, 1)`.

Source: https://github.com/pytorch/pytorch/issues/99929 (fixed by pytorch/pytorch#99528)
Kept: `func` with `@dynamo.optimize()` (the decorator of the report).
Simplified: the random tensor is an argument so the program is deterministic.
"""
import torch
import torch._dynamo as dynamo


@dynamo.optimize()
def func(a):
    b = a.repeat(10, 1, 1)
    c = a.repeat_interleave(repeats=10, dim=0)
    return b, c


def make():
    torch.manual_seed(0)
    return func._torchdynamo_orig_callable, [(torch.rand(1, 1, 1),)]
