"""GM403 bad: a NumPy position forced into Python to pick a shared layer (VAR's `PhiPartiallyShared`).

`np.argmin(...)` in compiled code is traced as a tensor op, and `.item()` of an integer NumPy value
is refused: Dynamo breaks there (GB0033).
"""
import numpy as np
import torch
from torch import nn


class PartiallyShared(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ticks = np.linspace(1 / 8, 1 - 1 / 8, 4)
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(4))

    def forward(self, x: torch.Tensor, at: float = 0.3) -> torch.Tensor:
        layer = self.layers[np.argmin(np.abs(self.ticks - at)).item()]
        return layer(x)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return PartiallyShared(), [(torch.randn(2, 4),)]


compiled = torch.compile(PartiallyShared())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
