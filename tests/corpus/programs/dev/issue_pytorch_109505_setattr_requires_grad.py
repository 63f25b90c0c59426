"""`foo.requires_grad = True` on a tensor created inside the compiled region.

Source: https://github.com/pytorch/pytorch/issues/109505 (the report is one line; graph break added by
pytorch/pytorch#113163)
Kept: the assignment on a fresh tensor (the torch.tensor polyfill case the reporter hit), in a compiled function.
Simplified: the polyfill around it is a clone of the input.
"""
import torch


@torch.compile
def make_leaf(x):
    foo = x.detach().clone() * 2
    foo.requires_grad = True
    return foo


def make():
    return make_leaf._torchdynamo_orig_callable, [(torch.ones(3),)]
