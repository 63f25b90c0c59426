"""GM403 negative: NumPy scalars on a module used only where they trace.

`x * self.scale` multiplies by a NumPy float64 and `x[:, : self.keep]` slices with a
NumPy int64: both trace (measured), and `self.scale is None` is Python's identity test.
Nothing may be flagged, and Dynamo must not break.
"""
import numpy as np
import torch
from torch import nn


class Scale(nn.Module):
    def __init__(self, scale=None):
        super().__init__()
        self.scale = np.float64(0.5) if scale is None else np.float64(scale)
        self.keep = np.int64(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.scale is None:
            return x
        return x[:, : self.keep] * self.scale


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Scale(), [(torch.randn(2, 4),)]


compiled = torch.compile(Scale())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
