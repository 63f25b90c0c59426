"""`torch.unique_consecutive(dim=0, input=x)` in a function compiled with fullgraph=True.

Source: pytorch/pytorch#113118 (https://github.com/pytorch/pytorch/issues/113118)
Kept: the reporter's `forward` function verbatim (keyword-only call with dim=0), the eager run
first, then `torch.compile(forward, fullgraph=True)(x)`.
Simplified: a second input with repeated rows so the op actually collapses something.
"""
import torch


def forward(x):
    return torch.unique_consecutive(dim=0, input=x)


def main():
    x = torch.rand([2], dtype=torch.float32)  # generate arg
    forward(x)  # on eagermode
    print("build succeeded")
    return torch.compile(forward, fullgraph=True)(x)  # on torch.compile mode(with fullgrah=True)


def make():
    torch.manual_seed(0)
    x = torch.rand([2], dtype=torch.float32)
    rep = torch.tensor([1.0, 1.0, 2.0, 2.0, 3.0])
    return forward, [(x,), (rep,)]
