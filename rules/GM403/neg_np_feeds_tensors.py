"""GM403 negative: NumPy over Python values whose result only feeds tensors stays in the graph.

Dynamo traces `np.log(k)` as a 0-d tensor; mixed into tensor arithmetic (Pegasus-X's sinusoidal
positions) or passed to a tensor method (DINOv3's `uniform_(-r, r)` jitter) it never reaches Python,
so nothing breaks (measured, torch 2.13). Nothing here may be flagged, and Dynamo must not break.
"""
import numpy as np
import torch
from torch import nn


class Positions(nn.Module):
    def __init__(self, max_scale: float = 10000.0, jitter: float = 1.5):
        super().__init__()
        self.max_scale = max_scale
        self.jitter = jitter

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        div_term = torch.exp(
            torch.arange(half, dtype=torch.int64).type_as(x) * -(np.log(float(self.max_scale)) / (half - 1))
        )
        jitter_range = np.log(self.jitter)
        jitter = torch.empty((1, half), dtype=x.dtype).uniform_(-jitter_range, jitter_range).exp()
        return x[..., :half] * div_term * jitter / np.sqrt(x.shape[-1])


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Positions(), [(torch.randn(2, 8),)]


compiled = torch.compile(Positions())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
