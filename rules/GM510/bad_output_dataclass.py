"""GM510 bad: a helper declares its output `@dataclass` where it returns it, inside the compiled forward.

The class statement breaks (GB8977), and since the body names `torch` (`torch.Tensor` annotations)
Dynamo also fails on the class body at the decorator's line (GB0082). No fix: move the class to module level.
"""
import dataclasses

import torch
from torch import nn


def pooled_outputs(hidden: torch.Tensor):
    @dataclasses.dataclass
    class PooledOutput:
        last_hidden_state: torch.Tensor
        pooled: torch.Tensor

    return PooledOutput(hidden, hidden.mean(dim=1))


class Encoder(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        out = pooled_outputs(self.proj(hidden))
        return out.pooled + 1


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Encoder(), [(torch.randn(2, 3, 4),)]


compiled = torch.compile(Encoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
