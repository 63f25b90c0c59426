"""Negative: `if hidden.ndim == 2` adds a batch dim based on rank -- no break."""
import torch
from torch import nn


class Pooler(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.dense = nn.Linear(dim, dim)

    def forward(self, hidden):
        if hidden.ndim == 2:
            hidden = hidden.unsqueeze(0)
        return torch.tanh(self.dense(hidden[:, 0]))


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    return Pooler(), [(torch.randn(4, 8),), (torch.randn(2, 4, 8),)]


compiled = torch.compile(Pooler())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
