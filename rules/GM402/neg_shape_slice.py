"""GM402 negative: slice bounds from shapes, `len()` and Python ints are static.

Nothing here may be flagged, and Dynamo must not break.
"""
import torch
from torch import nn


class Halves(nn.Module):
    def __init__(self, keep: int = 2) -> None:
        super().__init__()
        self.keep = keep

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        half = x.shape[0] // 2
        head = x[:half]
        tail = x[len(x) - half :]
        return head + tail + x[: self.keep].sum() + x[:, : x.size(1) - 1].sum()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Halves(), [(torch.randn(4, 3),), (torch.randn(6, 3),)]


compiled = torch.compile(Halves())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
