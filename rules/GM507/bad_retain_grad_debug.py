"""GM507 bad: a block that keeps the gradient of an intermediate activation for debugging,
with `retain_grad()` inside the compiled forward.

`Tensor.retain_grad()` does not work with the compiled graph's autograd: Dynamo breaks the
graph at the call ("Tensor.retain_grad() with AOTDispatcher", GB0108).
"""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, dim)
        self.fc2 = nn.Linear(dim, dim)
        self.hidden: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x).relu()
        h.retain_grad()
        self.hidden = h
        return self.fc2(h)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Block(), [(torch.randn(2, 4),)]


block = torch.compile(Block())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
