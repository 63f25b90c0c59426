"""A nested helper rewrites a dict of tensors with a boolean index: "dynamic Tensor.__getitem__(bool[])".

Source: https://github.com/pytorch/pytorch/issues/99609
Kept: func with the dict `a = {"str": rand(2, 2, 3)}`, the nested `inner(t)`
looping over `a.items()` and assigning `a[k] = v[t]`, called with `t2 < 1`;
the report's note that inlining the loop changes the result.
Simplified: the random tensor and the index tensor are arguments (the
original builds them inside and runs it through dynamo.explain); the dict is
returned so the work is observable.
"""
import torch


def func(x, t2):
    a = {"str": x}

    def inner(t):
        for k, v in a.items():
            a[k] = v[t]

    inner(t2 < 1)
    return a


compiled = torch.compile(func)


def make():
    torch.manual_seed(0)
    return func, [(torch.rand([2, 2, 3]), torch.tensor([0, 1], dtype=torch.int64))]
