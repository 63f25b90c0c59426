"""GM205 bad: a head that only collects debug statistics when its logger has somewhere to
write them, tested through the logger's own fields.

Dynamo holds `logger.handlers` and `logger.disabled` unresolved: their truth breaks the
graph ("Unsupported python_type() call", GB4841), at the `if`.
"""
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class Head(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.stats: list[float] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.proj(x)
        if logger.handlers and not logger.disabled:
            self.stats.append(0.0)
        return y.relu()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Head(), [(torch.randn(2, 4),)]


head = torch.compile(Head())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
