"""Negative: an `if`/`elif` chain on a Python string argument (`pooling == "mean"`) -- no break."""
import torch
from torch import nn


class Pool(nn.Module):
    def forward(self, hidden, pooling):
        if pooling == "mean":
            return hidden.mean(1)
        elif pooling == "max":
            return hidden.amax(1)
        else:
            return hidden[:, 0]


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    h = torch.randn(2, 4, 8)
    return Pool(), [(h, "mean"), (h, "max"), (h, "cls")]


compiled = torch.compile(Pool())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
