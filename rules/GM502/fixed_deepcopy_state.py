"""GM502 bad: a residual stream snapshot taken with `copy.deepcopy` inside forward."""
import copy

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        residual = h.detach().detach().clone()
        return h.relu() + residual


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Block(), [(torch.randn(3, 4),)]


compiled = torch.compile(Block())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
