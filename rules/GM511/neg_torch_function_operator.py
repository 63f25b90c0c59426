"""GM511 negative: the operator object takes part in torch's dispatch (`__torch_function__`), and the
plain one is applied through its method.

Nothing here may be flagged, and Dynamo must not break.
"""
import torch
from torch import nn


class Scaled:
    def __init__(self, w: torch.Tensor) -> None:
        self.w = w

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        args = [a.w if isinstance(a, Scaled) else a for a in args]
        return func(*args, **(kwargs or {}))


class LowRankOperator:
    def __init__(self, u: torch.Tensor, v: torch.Tensor) -> None:
        self.u = u
        self.v = v

    def __rmatmul__(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.u) @ self.v


class Adapter(nn.Module):
    def __init__(self, dim: int = 4, rank: int = 2) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.scale = Scaled(torch.full((dim,), 0.5))
        self.delta = LowRankOperator(torch.randn(dim, rank), torch.randn(rank, dim))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        h = self.proj(hidden) * self.scale
        return h + self.delta.__rmatmul__(h)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Adapter(), [(torch.randn(2, 4),)]


compiled = torch.compile(Adapter())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
