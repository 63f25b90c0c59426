"""GM521 bad: a graph layer keeps its sparse adjacency on `self` and reads it where Dynamo does not need it yet.

Dynamo wraps a value when code first uses it: `adj = self.adj` only names it, and a call takes its arguments
when it runs, so the breaks (GB0015) are at `torch.sparse.mm(adj, h)` and at the `_nnz()` read below the
first argument, not at the lines that name the adjacency.
"""
import torch
from torch import nn


class DropEdgeConv(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        indices = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]])
        self.adj = torch.sparse_coo_tensor(indices, torch.ones(4), (dim, dim))
        self.weight = nn.Parameter(torch.randn(dim, dim))

    def propagate(self, x: torch.Tensor) -> torch.Tensor:
        adj = self.adj
        h = x @ self.weight
        return torch.sparse.mm(adj, h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        edges = self.count(self.adj,
                           self.adj._nnz())
        return self.propagate(x) * edges

    def count(self, adj: torch.Tensor, nnz: int) -> int:
        return nnz + adj.shape[0]


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return DropEdgeConv(), [(torch.randn(4, 4),)]


compiled = torch.compile(DropEdgeConv())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
