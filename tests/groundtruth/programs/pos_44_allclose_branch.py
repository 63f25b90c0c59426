"""Positive: `if torch.allclose(w, w.t())` -- allclose returns a Python bool from tensor data, so Dynamo breaks at the call (GB0033 "Data dependent operator", 2 graphs)."""
import torch
from torch import nn


class SymmetricMix(nn.Module):
    def forward(self, w, x):
        w = w * 1.0
        if torch.allclose(w, w.t()):  # expect: GM105
            return x @ w
        return x @ (0.5 * (w + w.t()))


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    x = torch.ones(4, 8)
    sym = torch.eye(8)
    asym = torch.triu(torch.ones(8, 8))
    return SymmetricMix(), [(sym, x), (asym, x)]


compiled = torch.compile(SymmetricMix())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
