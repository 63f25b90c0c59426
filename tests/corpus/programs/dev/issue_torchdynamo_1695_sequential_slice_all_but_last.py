"""Slicing an nn.Sequential in forward: `self.linears[:-1], self.linears[-1]`.

Source: pytorch/torchdynamo#1695 (https://github.com/pytorch/torchdynamo/issues/1695)
Kept: the reporter's TestModel (four Linears in a Sequential, a tuple
unpack of the slice and the last layer, both called in turn) and the
`toy_example(model, input)` wrapper that the reporter decorated with
`@torchdynamo.optimize('eager')` (today: `torch.compile(backend="eager")`).
Simplified: Linear(100, 100) -> Linear(16, 16), CPU instead of CUDA.
"""
import torch
from torch import nn


class TestModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linears = nn.Sequential(
            nn.Linear(16, 16),
            nn.Linear(16, 16),
            nn.Linear(16, 16),
            nn.Linear(16, 16),
        )

    def forward(self, x):
        all_but_last, last = self.linears[:-1], self.linears[-1]
        x = all_but_last(x)
        x = last(x)
        return x


@torch.compile(backend="eager")
def toy_example(model, input):
    return model(input)


def make():
    torch.manual_seed(0)
    model = TestModel()
    x = torch.rand((8, 16))
    return toy_example._torchdynamo_orig_callable, [(model, x)]
