"""GM104 positive: validation guard `if torch.isnan(y).any(): raise ValueError` (body only raises)."""
import torch
from torch import nn


class SafeLinear(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        y = self.fc(x)
        if torch.isnan(y).any():  # expect: GM104
            raise ValueError("SafeLinear produced NaN")
        return y.tanh()


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch.

    The raising branch is not exercised: calling it would raise ValueError.
    """
    torch.manual_seed(0)
    return SafeLinear(), [(torch.randn(4, 8),)]


m = SafeLinear()
cm = torch.compile(m)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
