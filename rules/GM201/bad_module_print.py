"""GM201 bad: `print` spelled through its module, and a pretty-printed config.

`builtins.print(...)` is the builtin (GB0059), and `pprint.pprint` of a dict sorts its keys,
which Dynamo refuses (GB0207; measured on torch 2.13).
"""
import builtins
import pprint

import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.config = {"dim": dim, "act": "gelu"}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pprint.pprint(self.config)
        y = self.proj(x)
        builtins.print("head out", y.shape)
        return y


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Head(), [(torch.randn(2, 4),)]


compiled = torch.compile(Head())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
