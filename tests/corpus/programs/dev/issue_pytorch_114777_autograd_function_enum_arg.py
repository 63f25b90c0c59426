"""A custom autograd.Function applied with an Enum member as a non-tensor argument.

Source: pytorch/pytorch#114777 (https://github.com/pytorch/pytorch/issues/114777)
Kept: the reporter's `SomeEnum(Enum)`, the pass-through `DoNothing`
autograd.Function taking `(x, e)`, and `f(x)` under
`@torch.compile(backend="eager", fullgraph=True)` that applies it to the
module-level `input` tensor (as the report writes it, not to `x`) with
`SomeEnum.A`; `input` requires grad.
Simplified: nothing.
"""
import torch
from enum import Enum
from typing import *


class SomeEnum(Enum):
    A = 0
    B = 1
    C = 2
    D = 3


class DoNothing(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, e):
        return x

    @staticmethod
    def backward(ctx, g):
        return g


@torch.compile(backend="eager", fullgraph=True)
def f(x):
    output = DoNothing.apply(
        input,
        SomeEnum.A,
    )
    return output


input = torch.tensor([[1., 2, 3], [4, 5, 6]], requires_grad=True)


def make():
    return f._torchdynamo_orig_callable, [(input,)]
