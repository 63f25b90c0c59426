"""Negative: `if self.training` is a Python bool attribute (guarded) -- no break."""
import torch
from torch import nn


class NoisyLinear(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.fc(x)
        if self.training:
            h = h * 0.9 + 0.05
        return h


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch.

    `self.training` is module state, not an input: make() returns the module in
    train mode (default), so only the training branch is exercised here.
    """
    torch.manual_seed(0)
    return NoisyLinear(), [(torch.randn(4, 8),)]


compiled = torch.compile(NoisyLinear().eval())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
