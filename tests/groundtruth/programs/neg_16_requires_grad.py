"""Negative: `if x.requires_grad` is tensor metadata (guarded) -- no break."""
import torch
from torch import nn


class CheckpointFriendly(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        if x.requires_grad:
            x = x * 1.0
        return torch.tanh(self.fc(x))


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    return CheckpointFriendly(), [(torch.randn(4, 8),), (torch.randn(4, 8).requires_grad_(),)]


compiled = torch.compile(CheckpointFriendly())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
