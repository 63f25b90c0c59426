"""GM402 bad: keep the first `n` rows, where `n` is counted from a mask (display-only).

The slice's size is a tensor's value: Dynamo copies it to the host at the
slice (GB0124), and the result's shape depends on data.
"""
import torch
from torch import nn


class KeepFirst(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        n = keep.sum()
        kept = h[:n]
        return kept * 2


def make():
    """Return (eager_callable, input_sets): some rows kept, none kept (all-false mask)."""
    torch.manual_seed(0)
    x = torch.randn(5, 4)
    return KeepFirst(), [
        (x, torch.tensor([True, True, False, False, False])),
        (x, torch.zeros(5, dtype=torch.bool)),
    ]


compiled = torch.compile(KeepFirst())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
