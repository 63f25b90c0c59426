"""GM102 bad: a module's fixed-point iteration `while (h - prev).abs().max() > self.tol` loops on a tensor-valued test."""
import torch
from torch import nn


class FixedPoint(nn.Module):
    def __init__(self, tol=1e-3):
        super().__init__()
        self.tol = tol

    def forward(self, x):
        prev = x * 0.0
        h = x * 0.5
        while (h - prev).abs().max() > self.tol:  # expect: GM102
            prev = h
            h = 0.5 * h
        return h + x


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    # ones: several iterations; zeros: the loop test is false at once
    return FixedPoint(), [(torch.ones(4, 8),), (torch.zeros(4, 8),)]


compiled = torch.compile(FixedPoint())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
