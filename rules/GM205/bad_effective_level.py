"""GM205 bad: `logger.getEffectiveLevel()` compared in a forward (advice only: no rewrite keeps the meaning)."""
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class Block(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        verbose = logger.getEffectiveLevel() <= logging.INFO
        return h * 2 if verbose else h


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Block(), [(torch.randn(3, 4),)]


compiled = torch.compile(Block())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
