"""GM201 bad: the `print` sits in a helper the compiled forward calls.

Deferring inside the helper would still split the caller's graph (measured:
3 graphs either way), so the fix guards it instead.
"""
import torch
from torch import nn


def report(name, t):
    print(name, tuple(t.shape))
    return t


class Block(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        h = report("hidden", self.fc(x))
        return torch.relu(h) + x


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Block(), [(torch.randn(2, 8),)]


compiled = torch.compile(Block())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
