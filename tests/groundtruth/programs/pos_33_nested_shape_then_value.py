"""GM101 positive: an outer shape test (no break) guards an inner tensor-value test (breaks)."""
import torch
from torch import nn


class SeqDropout(nn.Module):
    def __init__(self, min_len=2):
        super().__init__()
        self.min_len = min_len

    def forward(self, x):
        x = x * 1.0
        if x.shape[1] > self.min_len:
            if x[:, -1].abs().sum() == 0:  # expect: GM101
                x = x[:, :-1]
        return x.cumsum(1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    trailing_zero = torch.ones(2, 4, 8)
    trailing_zero[:, -1] = 0
    short = torch.ones(2, 2, 8)
    return SeqDropout(), [(torch.ones(2, 4, 8),), (trailing_zero,), (short,)]


compiled = torch.compile(SeqDropout())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
