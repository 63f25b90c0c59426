"""GM202 bad: `logger.info` with a tensor statistic in the middle of a forward."""
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class Encoder(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        if not torch.compiler.is_compiling():
            logger.info("hidden norm %.4f for batch %d", h.norm(), x.shape[0])
        return self.out(h)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Encoder(), [(torch.randn(3, 8),)]


compiled = torch.compile(Encoder())

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
