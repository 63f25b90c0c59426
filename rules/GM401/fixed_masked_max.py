"""GM401 bad: the largest positive activation, `h[h > 0].max()` on a float tensor.

On an empty selection the original raises and the fix returns `-inf`
(documented in the rule); the input sets below keep the selection non-empty,
and tests/test_host_sync_dynamo.py checks the all-false case on its own.
"""
import torch
from torch import nn


class PositivePeak(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x).float()
        positive = h > 0
        return torch.where(positive, h, -torch.inf).max() + 1


def make():
    """Return (eager_callable, input_sets) with at least one positive activation each."""
    torch.manual_seed(0)
    model = PositivePeak()
    return model, [(torch.randn(3, 4),), (torch.randn(1, 4) * 10,)]


compiled = torch.compile(PositivePeak())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
