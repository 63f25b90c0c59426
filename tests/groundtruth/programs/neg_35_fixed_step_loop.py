"""Negative: a fixed `for step in range(self.n_steps)` refinement loop with tensor math only -- unrolled, no break."""
import torch
from torch import nn


class Refiner(nn.Module):
    def __init__(self, dim=8, n_steps=3):
        super().__init__()
        self.step = nn.Linear(dim, dim)
        self.n_steps = n_steps

    def forward(self, x):
        h = x
        for _ in range(self.n_steps):
            h = h + 0.1 * torch.tanh(self.step(h))
        return h


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    return Refiner(), [(torch.randn(4, 8),)]


compiled = torch.compile(Refiner())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
