"""GM511 bad: a low-rank linear operator object applied to hidden states with `hidden @ operator`.

The operator implements `__rmatmul__`; eagerly the tensor's `__matmul__` gives up and Python calls it,
but Dynamo builds `matmul(tensor, object)` and fails (GB0055), then runs the whole forward eagerly.
The unsafe fix calls `operator.__rmatmul__(hidden)`, which Dynamo inlines.
"""
import torch
from torch import nn


class LowRankOperator:
    """`U @ V` without forming it."""

    def __init__(self, u: torch.Tensor, v: torch.Tensor) -> None:
        self.u = u
        self.v = v

    def __rmatmul__(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.u) @ self.v


class Adapter(nn.Module):
    def __init__(self, dim: int = 4, rank: int = 2) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.delta = LowRankOperator(torch.randn(dim, rank), torch.randn(rank, dim))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        h = self.proj(hidden)
        return h + h @ self.delta


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Adapter(), [(torch.randn(2, 4),)]


compiled = torch.compile(Adapter())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
