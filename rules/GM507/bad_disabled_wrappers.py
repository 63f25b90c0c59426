"""GM507 bad: a custom kernel kept out of compilation with `torch.compiler.disable` three ways:
a method decorated `@torch.compiler.disable(recursive=False)`, a wrapper bound in `__init__`,
and a module-level wrapper.

Each call runs eagerly between two graphs: the `recursive=False` method logs GB0099, the
wrappers GB0098.
"""
import torch
from torch import nn


def fused_gelu(x: torch.Tensor) -> torch.Tensor:
    return x * torch.sigmoid(1.702 * x)


eager_norm = torch.compiler.disable(nn.functional.layer_norm)


class Block(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.act = torch.compiler.disable(fused_gelu, reason="hand-written kernel")

    @torch.compiler.disable(recursive=False)
    def gate(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x.mean(-1, keepdim=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(self.proj(x))
        h = self.gate(h)
        return eager_norm(h, h.shape[-1:])


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Block(), [(torch.randn(2, 4),)]


block = torch.compile(Block())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
