"""GM403 bad: NumPy scalars kept on a module and read in `forward` (nnU-Net, WaveRNN).

`__init__` stores NumPy values: `self.total = np.prod(scales)` (an int64) and
`self.weight_factors = tuple(weights)` (NumPy float64s). Dynamo traces NumPy as
tensors, so in `forward` the size `x.shape[1] // self.total` needs the data (GB0033),
and so does the comprehension's test `self.weight_factors[i] != 0.0` (GB0170). Multiplying
by one, or slicing with one, traces.
"""
import numpy as np
import torch
from torch import nn


class DeepSupervision(nn.Module):
    def __init__(self, weights, scales=(2, 2)):
        super().__init__()
        self.weight_factors = tuple(weights)
        self.total = np.prod(scales)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.view(x.shape[0], x.shape[1] // self.total, -1)
        parts = [self.weight_factors[i] * h[:, i] for i in range(h.shape[1]) if self.weight_factors[i] != 0.0]
        return sum(parts)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return DeepSupervision(np.array([0.75, 0.25])), [(torch.randn(3, 8),)]


compiled = torch.compile(DeepSupervision(np.array([0.75, 0.25])))

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
