"""Negative: data-dependent control flow expressed with `torch.cond` is captured as one graph -- no break."""
import torch
from torch import nn


class CondShift(nn.Module):
    def forward(self, x):
        y = x * 2
        return torch.cond(y.sum() > 0, lambda t: t - 1, lambda t: t + 1, (y,))


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return CondShift(), [(torch.ones(4, 8),), (-torch.ones(4, 8),)]


compiled = torch.compile(CondShift())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
