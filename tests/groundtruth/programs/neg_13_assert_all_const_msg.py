"""Negative: `assert (y > -1e9).all(), "msg"` with a constant message is lowered to an async assert -- no break."""
import torch
from torch import nn


class MaskedScores(nn.Module):
    def forward(self, q, k):
        y = q @ k.transpose(-2, -1)
        assert (y > -1e9).all(), "scores underflowed"
        return y.softmax(-1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    return MaskedScores(), [(torch.randn(4, 8), torch.randn(4, 8))]


compiled = torch.compile(MaskedScores())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
