"""GM204 bad: a helper that silences a deprecation warning around `torch.meshgrid` with
`warnings.simplefilter` inside `with warnings.catch_warnings():`, called from a compiled forward.

Dynamo skips the `warnings` module; inside the `catch_warnings` block it then cannot rebuild
the context at the break, logs "Reconstruction failure" (GB0092) at the filter call and gives
up on the whole forward.
"""
import warnings

import torch
from torch import nn


def quiet_meshgrid(rows: torch.Tensor, cols: torch.Tensor):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        return torch.meshgrid(rows, cols, indexing="ij")


class GridPositions(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(2, dim)

    def forward(self, h: int, w: int) -> torch.Tensor:
        ys, xs = quiet_meshgrid(torch.arange(h), torch.arange(w))
        grid = torch.stack([ys, xs], dim=-1).float()
        return self.proj(grid)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return GridPositions(), [(3, 2)]


positions = torch.compile(GridPositions())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
