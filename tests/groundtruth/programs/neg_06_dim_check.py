"""Negative: `if x.dim() == 3` is a rank test (static) -- no break, only a recompile per rank."""
import torch
from torch import nn


class TokenMLP(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        if x.dim() == 3:
            b, t, d = x.shape
            return self.fc(x.reshape(b * t, d)).reshape(b, t, d)
        return self.fc(x)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    return TokenMLP(), [(torch.randn(2, 4, 8),), (torch.randn(4, 8),)]


compiled = torch.compile(TokenMLP())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
