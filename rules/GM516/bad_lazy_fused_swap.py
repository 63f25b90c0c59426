"""GM516 bad: a block that swaps its projection to a fused subclass the first time `forward` runs.

Dynamo does not reassign `__class__` on a module: the swap breaks the graph
("__class__ assignment on user-defined object", GB4271).
"""
import torch
from torch import nn


class FusedLinear(nn.Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.bias, x, self.weight.t())


class Block(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.fuse = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.relu()
        if self.fuse and type(self.proj) is nn.Linear:
            self.proj.__class__ = FusedLinear
        return self.proj(h)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Block(), [(torch.randn(2, 4),)]


block = torch.compile(Block())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
