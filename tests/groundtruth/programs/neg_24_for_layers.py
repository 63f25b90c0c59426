"""Negative: `for i, layer in enumerate(self.layers)` with `if i % 2 == 0` on a Python int -- unrolled, no break."""
import torch
from torch import nn


class Stack(nn.Module):
    def __init__(self, dim=8, depth=4):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(depth))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            if i % 2 == 0:
                x = x + torch.relu(layer(x))
            else:
                x = layer(x)
        return x


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    return Stack(), [(torch.randn(4, 8),)]


compiled = torch.compile(Stack())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
