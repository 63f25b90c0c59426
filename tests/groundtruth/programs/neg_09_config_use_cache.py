"""Negative: `if self.config.use_cache` reads a Python config flag (constant to Dynamo) -- no break."""
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class TinyConfig:
    hidden: int = 8
    use_cache: bool = True


class Decoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.k = nn.Linear(config.hidden, config.hidden)

    def forward(self, x):
        k = self.k(x)
        if self.config.use_cache:
            return k, k.detach() * 1.0
        return k, None


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch.

    use_cache is configuration, not an input: the module is built with use_cache=True.
    """
    torch.manual_seed(0)
    return Decoder(TinyConfig()), [(torch.randn(1, 4, 8),)]


compiled = torch.compile(Decoder(TinyConfig(use_cache=False)))

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
