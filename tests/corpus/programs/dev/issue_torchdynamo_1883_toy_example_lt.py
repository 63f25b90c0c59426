"""`y = x.sum(); if y < 0:` -- the break is the data-dependent branch, not the `lt`.

Source: https://github.com/pytorch/torchdynamo/issues/1883
Kept: the reporter's adapted `toy_example` verbatim; it was run through `dynamo.explain`, here compiled.
Simplified: explain printing dropped.
"""
import torch


def toy_example(a, b):
    x = torch.add(a, 33)
    y = x.sum()
    if y < 0:
        x = torch.add(x, 55)
    x = torch.add(x, b)
    return x


opt_toy_example = torch.compile(toy_example, backend="eager")


def make():
    return toy_example, [(torch.ones(10), torch.ones(10)), (-torch.ones(10) * 40, torch.ones(10))]
