"""GM502 negative: deep copies of plain Python values (a config dict) are traced.

Nothing here may be flagged, and Dynamo must not break.
"""
import copy

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.options = {"scale": 2.0, "shift": [1.0]}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        options = copy.deepcopy(self.options)
        options["shift"].append(3.0)
        return self.fc(x) * options["scale"] + sum(options["shift"])


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Block(), [(torch.randn(3, 4),)]


compiled = torch.compile(Block())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
