"""GM101 positive: norm clipping `if total_norm > self.max_norm` in a module (classic clip pattern)."""
import torch
from torch import nn


class ClipByNorm(nn.Module):
    def __init__(self, max_norm=4.0):
        super().__init__()
        self.max_norm = max_norm

    def forward(self, update):
        total_norm = update.pow(2).sum().sqrt()
        if total_norm > self.max_norm:  # expect: GM101
            update = update * (self.max_norm / (total_norm + 1e-6))
        return update


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    return ClipByNorm(), [(torch.ones(4, 8),), (torch.full((4, 8), 0.1),)]


m = ClipByNorm()
cm = torch.compile(m)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
