"""Custom autograd.Function scaling by `numpy.sqrt(i.numel())` (reported recompiling each call).

Source: pytorch/pytorch#91101 (https://github.com/pytorch/pytorch/issues/91101)
Kept: the reporter's `Op` autograd.Function (forward `i * sqrt(i.numel())` with
`ctx.save_for_backward(result)`, backward `grad_output * sqrt(result.numel())`),
`sqrt` imported from numpy (the reported case; `math.sqrt` was the control),
`toy_example(x) = Op.apply(x).norm()` under an inductor compile decorator, and
`config.cache_size_limit = 4` with the five-call test loop.
Simplified: `@optimize("inductor")` -> `@torch.compile(backend="inductor")`;
the argv switch between numpy and math is fixed to numpy.
"""
import torch
from numpy import sqrt
from torch._dynamo import config

config.cache_size_limit = 4


class Op(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        result = i * sqrt(i.numel())
        ctx.save_for_backward(result)
        return result

    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * sqrt(result.numel())


@torch.compile(backend="inductor")
def toy_example(x):
    return Op.apply(x).norm()


def test():
    for i in range(5):
        x = torch.randn(10)
        print(toy_example(x))


def make():
    torch.manual_seed(0)
    return toy_example._torchdynamo_orig_callable, [(torch.randn(10),), (torch.randn(10),)]
