"""Negative: an empty-input early return `if x.numel() == 0` depends only on the shape -- no break."""
import torch
from torch import nn


class MeanPool(nn.Module):
    def forward(self, x):
        if x.numel() == 0:
            return x.new_zeros(x.shape[-1])
        return (x * 2).mean(dim=0)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return MeanPool(), [(torch.ones(4, 8),), (torch.ones(0, 8),)]


compiled = torch.compile(MeanPool())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
