"""GM503 bad: learned-query style: a fresh tensor is switched on with `requires_grad_()` and the
block returns a value computed from it, through another name.

The output derives from the switched-on tensor, so Dynamo breaks at `requires_grad_()` (GB8985).
"""
import torch
from torch import nn


class QueryBlock(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        queries = torch.zeros_like(x)
        queries.requires_grad_(not torch.compiler.is_compiling())
        mixed = self.proj(x) + queries
        return mixed.relu()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return QueryBlock(), [(torch.randn(2, 4),)]


compiled = torch.compile(QueryBlock())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
