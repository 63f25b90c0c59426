"""GM104 bad: `if torch.isnan(y).any(): raise ValueError(...)` -- a validation guard whose body only raises."""
import torch
from torch import nn


class CheckedMLP(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc1 = nn.Linear(dim, 16)
        self.fc2 = nn.Linear(16, dim)

    def forward(self, x):
        y = self.fc2(torch.relu(self.fc1(x)))
        if torch.isnan(y).any():  # expect: GM104
            raise ValueError("CheckedMLP produced NaN")
        return y


#: The second input set takes the raising side (a NaN input gives NaN activations).
RAISING_INPUTS = {1: "ValueError"}


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    bad = torch.randn(4, 8)
    bad[0, 0] = float("nan")
    return CheckedMLP(), [(torch.randn(4, 8),), (bad,)]


compiled = torch.compile(CheckedMLP())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
