"""Negative: a raise-only guard on shapes (`if x.shape[-1] != self.dim: raise`) is static -- no break (not GM104)."""
import torch
from torch import nn


class Projector(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.dim = dim
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        if x.shape[-1] != self.dim:
            raise ValueError(f"expected last dim {self.dim}, got {x.shape[-1]}")
        return self.fc(x)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch.

    The raising branch is not exercised: calling it would raise ValueError.
    """
    torch.manual_seed(0)
    return Projector(), [(torch.randn(4, 8),)]


compiled = torch.compile(Projector())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
