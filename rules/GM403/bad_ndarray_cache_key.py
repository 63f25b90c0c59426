"""GM403 bad: a NumPy array's `dtype` and `tobytes()` as a cache key in traced code (EDM2's `constant()` helper).

Dynamo traces NumPy arrays as tensors, and a traced array has no `dtype` attribute (GB0157) or
`tobytes()` method (GB0158) it can model: each one breaks the graph.
"""
import numpy as np
import torch
from torch import nn

_constant_cache: dict = {}


def constant(value: np.ndarray) -> torch.Tensor:
    key = (value.shape, value.dtype, value.tobytes())
    tensor = _constant_cache.get(key, None)
    if tensor is None:
        tensor = torch.as_tensor(value.copy())
        _constant_cache[key] = tensor
    return tensor


class Gain(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * constant(np.full([x.shape[-1]], 0.5, dtype=np.float32))


def make():
    """Return (eager_callable, input_sets)."""
    return Gain(), [(torch.randn(2, 4),)]


compiled = torch.compile(Gain())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
