"""GM510 negative: the options class and the output dataclass are defined once, at module level.

Nothing here may be flagged, and Dynamo must not break.
"""
import dataclasses

import torch
from torch import nn


class Options:
    scale = 0.5
    shift = 1.0


@dataclasses.dataclass
class PooledOutput:
    last_hidden_state: torch.Tensor
    pooled: torch.Tensor


class Encoder(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        h = self.proj(hidden) * Options.scale + Options.shift
        out = PooledOutput(h, h.mean(dim=1))
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
