"""Negative: `assert x.dim() == 2, "..."` checks static metadata -- no break."""
import torch
from torch import nn


class Bilinear(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.w = nn.Parameter(torch.eye(dim))

    def forward(self, x, y):
        assert x.dim() == 2, "x must be 2-D"
        assert x.shape == y.shape, "x and y must match"
        return ((x @ self.w) * y).sum(-1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return Bilinear(), [(torch.ones(4, 8), torch.full((4, 8), 2.0))]


compiled = torch.compile(Bilinear())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
