"""GM510 bad: a block defines a small options class inside `forward` and reads its constants.

The `class` statement calls `__build_class__`, which Dynamo refuses by default: the graph ends there.
The unsafe fix sets `torch._dynamo.config.enable_trace_load_build_class = True` after the imports.
"""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        h = self.proj(hidden)

        class Options:
            """Scaling options of this call."""

            scale = 0.5
            shift = 1.0

        return h * Options.scale + Options.shift


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Block(), [(torch.randn(2, 4),)]


compiled = torch.compile(Block())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
