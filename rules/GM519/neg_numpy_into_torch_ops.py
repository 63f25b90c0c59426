"""GM519 negative: NumPy of a tensor whose result only meets tensor arithmetic, a torch
function and an array method, or is returned: `torch._numpy` traces all of it (no break, no
error, measured). Returned, the value is an ndarray under compile and a tensor eagerly, which
no graph break shows.
"""
import numpy as np
import torch
from torch import nn


class Scale(nn.Module):
    def forward(self, x: torch.Tensor):
        gain = torch.relu(np.log1p(x.abs()))
        centred = np.sqrt(x.abs()) - x
        return gain * x + centred, np.abs(x).sum()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Scale(), [(torch.randn(2, 4),)]


scale = torch.compile(Scale())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
