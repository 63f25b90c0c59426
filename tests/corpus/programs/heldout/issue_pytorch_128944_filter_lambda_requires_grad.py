"""Iterating `filter(lambda x: x.requires_grad, inputs)` inside a compiled function.

Source: https://github.com/pytorch/pytorch/issues/128944
Kept: toy_example verbatim (out = inputs[0], multiply by the inputs that
require grad, + 2000), the bfloat16 aranges, `torch.compile(toy_example,
backend="inductor")`.
Simplified: nothing.
"""
import torch


def toy_example(inputs):
    out = inputs[0]
    for inp in filter(lambda x: (x.requires_grad), inputs):
        out = out * inp
    out = out + 2000
    return out


compiled_fn = torch.compile(toy_example, backend="inductor")


def make():
    input1 = torch.arange(2, dtype=torch.bfloat16)
    input2 = torch.arange(2, dtype=torch.bfloat16).requires_grad_(True)
    return toy_example, [([input1, input2],)]
