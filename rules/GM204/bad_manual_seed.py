"""GM204 bad: Reformer-style reseeding of torch's RNG inside forward, so dropout repeats in the backward pass."""
import torch
from torch import nn


class ReversibleDropout(nn.Module):
    def __init__(self, seed: int = 7):
        super().__init__()
        self.seed = seed

    def forward(self, x):
        h = torch.tanh(x)
        torch.manual_seed(self.seed)
        return nn.functional.dropout(h, p=0.5, training=True)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return ReversibleDropout(), [(torch.randn(4),)]


compiled = torch.compile(ReversibleDropout())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
