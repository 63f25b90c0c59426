"""GM302 negative: NumPy copies that stay NumPy, and Python lists, are traced without a break.

Nothing here may be flagged, and Dynamo must not break.
"""
import numpy as np
import torch
from torch import nn


class KeepsNumpy(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor):
        h = self.fc(x)
        scores = h.detach().numpy()
        doubled = np.asarray(h.detach()) * 2
        sizes = list(h.shape)
        widths = [1, 2, 3]
        return h * len(sizes) + widths[0], scores.sum(), doubled


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return KeepsNumpy(), [(torch.randn(3, 4),)]


compiled = torch.compile(KeepsNumpy())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
