"""GM502 bad: a feature pyramid copies its list of scales and its options dict with `copy.copy` in forward."""
import copy

import torch
from torch import nn


class Pyramid(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scales = [1.0, 0.5]
        levels = scales.copy()
        levels.append(0.25)
        options = ({"scale": 2.0}).copy()
        h = self.proj(x)
        return sum(h * s for s in levels) * options["scale"] + len(scales)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Pyramid(), [(torch.randn(3, 4),)]


compiled = torch.compile(Pyramid())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
