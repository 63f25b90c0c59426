"""A nested helper indexes every dict value with a boolean tensor (`a[k] = v[t]`): dynamic
`Tensor.__getitem__(bool[])` graph break inside a `for` loop.

Source: https://github.com/pytorch/pytorch/issues/99609
Kept: `func` with the closure dict `a`, the nested `inner(t)` with its loop over `a.items()`, the call
`inner(t2 < 1)`; the reporter ran it through `dynamo.explain`, here it is `torch.compile`d.
Simplified: the dict is built from an argument so the program is deterministic; `func` returns the dict.
"""
import torch


def func(x):
    a = {"str": x}
    t2 = torch.tensor([0, 1], dtype=torch.int64)

    def inner(t):
        for k, v in a.items():
            a[k] = v[t]

    inner(t2 < 1)
    return a


compiled_func = torch.compile(func)


def make():
    torch.manual_seed(0)
    return func, [(torch.rand([2, 2, 3]),)]
