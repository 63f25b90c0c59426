"""GM202 bad: a logger kept on `self` logs a tensor that is then updated in place."""
import logging

import torch
from torch import nn


class RunningNorm(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.log = logging.getLogger("running_norm")
        self.register_buffer("mean", torch.zeros(dim))

    def forward(self, x):
        mean = x.mean(dim=0)
        if not torch.compiler.is_compiling():
            self.log.debug("batch mean %s", mean)
        mean.mul_(0.1)
        return x - mean


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return RunningNorm(), [(torch.randn(5, 4),)]


compiled = torch.compile(RunningNorm())

if __name__ == "__main__":
    logging.basicConfig(level=logging.DEBUG)
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
