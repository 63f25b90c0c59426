"""Negative: a helper's `if b is not None` on an optional parameter, called with and without bias -- no break."""
import torch
from torch import nn


def linear(x, w, b=None):
    y = x @ w.t()
    if b is not None:
        y = y + b
    return y


class TwoProj(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.w1 = nn.Parameter(torch.eye(dim))
        self.b1 = nn.Parameter(torch.full((dim,), 0.1))
        self.w2 = nn.Parameter(torch.eye(dim) * 2)
        self.b2 = None

    def forward(self, x):
        return linear(linear(x, self.w1, self.b1), self.w2, self.b2)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return TwoProj(), [(torch.ones(4, 8),)]


compiled = torch.compile(TwoProj())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
