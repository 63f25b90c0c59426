"""GM205 bad: expensive debug statistics behind `logger.isEnabledFor(logging.DEBUG)` in a forward."""
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class Block(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x).relu()
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("activation norm %s", h.norm())
        return h + x


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Block(), [(torch.randn(3, 4),)]


compiled = torch.compile(Block())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
