"""GM516 negative: the same swap done once in `__init__`, before compiling; `forward` only reads the class."""
import torch
from torch import nn


class FusedLinear(nn.Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.addmm(self.bias, x, self.weight.t())


class Block(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.proj.__class__ = FusedLinear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.relu()
        if self.proj.__class__ is FusedLinear:
            h = h * 2
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
