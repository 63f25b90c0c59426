"""GM403 negative: NumPy where torch.compile does not trace it, or on arrays made from tensors.

Nothing here may be flagged, and Dynamo must not break.
"""
import numpy as np
import torch
from torch import nn


class Precomputed(nn.Module):
    def __init__(self, a: int = 4, b: int = 6) -> None:
        super().__init__()
        self.chunk = int(np.lcm(a, b))  # __init__ runs eagerly

    def forward(self, x: torch.Tensor):
        if x.shape[-1] % self.chunk == 0:
            x = x * 2
        return x + 1, np.square(x.detach().numpy())


def make():
    """Return (eager_callable, input_sets) taking both branches."""
    torch.manual_seed(0)
    return Precomputed(), [(torch.randn(2, 12),), (torch.randn(2, 5),)]


compiled = torch.compile(Precomputed())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
