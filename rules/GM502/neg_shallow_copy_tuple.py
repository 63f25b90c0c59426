"""GM502 negative: shallow copies of a tuple (of tensors too) and of a plain object are traced.

Nothing here may be flagged, and Dynamo must not break.
"""
import copy

import torch
from torch import nn


class Settings:
    def __init__(self) -> None:
        self.scale = 2.0


class Block(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.settings = Settings()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        pair = copy.copy((h, x))
        settings = copy.copy(self.settings)
        return pair[0] * settings.scale + pair[1]


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Block(), [(torch.randn(3, 4),)]


compiled = torch.compile(Block())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
