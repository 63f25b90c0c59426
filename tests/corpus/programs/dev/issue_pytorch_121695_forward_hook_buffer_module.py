"""A forward hook (`output + 1`) on a module that adds a registered buffer, compiled fullgraph.

Source: pytorch/pytorch#121695 (https://github.com/pytorch/pytorch/issues/121695)
Kept: MockModule (register_buffer "buf0", `x + self.buf0`), forward_hook returning `output + 1`,
`mod.register_forward_hook(forward_hook)` and `torch.compile(backend="aot_eager", fullgraph=True)(mod)`.
Simplified: CPU instead of CUDA; the unused MyLinear class of the repro is kept for its shape.
"""
import torch
import torch.nn as nn


class MyLinear(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(out_features, in_features))
        self.bias = torch.nn.Parameter(torch.randn(out_features))

    def forward(self, x):
        return torch.nn.functional.linear(x, self.weight, self.bias)


class MockModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf0", torch.randn(10, 10))

    def forward(self, x):
        return x + self.buf0


def forward_hook(module: nn.Module, inputs: torch.Tensor, output: torch.Tensor):
    return output + 1


def build():
    mod = MockModule()
    mod.register_forward_hook(forward_hook)
    return mod


opt_mod = torch.compile(backend="aot_eager", fullgraph=True)(build())


def make():
    torch.manual_seed(0)
    return build(), [(torch.randn(10, 10),)]
