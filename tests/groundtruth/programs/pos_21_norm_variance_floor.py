"""GM101 positive: a normalisation layer that special-cases near-constant inputs (`if var.min() < self.eps`)."""
import torch
from torch import nn


class GuardedLayerNorm(nn.Module):
    def __init__(self, dim=8, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, keepdim=True, unbiased=False)
        if var.min() < self.eps:  # expect: GM101
            var = var + self.eps
        return (x - mean) / var.sqrt() * self.weight + self.bias


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    ramp = torch.linspace(-1.0, 1.0, 8).repeat(4, 1)
    const = torch.ones(4, 8)
    return GuardedLayerNorm(), [(ramp,), (const,)]


compiled = torch.compile(GuardedLayerNorm())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
