"""GM301 negative: 0-d tensors built from Python numbers and shapes alone, used as sizes.

Dynamo knows the value of `torch.tensor(n)`, `torch.div(n, 2)` and arithmetic over them, so as a
size they are no data-dependent operator (measured, torch 2.13). Nothing here may be flagged, and
Dynamo must not break. (As a slice bound or in an `if` they would still break: GM402, GM101.)
"""
import torch
from torch import nn


class Unfold(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        chunks = x.view(torch.div(x.size(1), 2, rounding_mode="trunc"), 2, -1)
        half = torch.tensor(x.size(1)).to(x.device) // 2
        positions = torch.arange(half, device=x.device)
        padded = x.new_zeros(x.size(0), half + 1)
        return chunks.sum() + positions.sum() + padded.sum()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Unfold(), [(torch.randn(1, 8),), (torch.randn(3, 6),)]


compiled = torch.compile(Unfold())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
