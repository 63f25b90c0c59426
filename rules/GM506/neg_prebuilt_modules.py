"""GM506 negative: modules built in `__init__` and chosen in forward; forward builds only parameter-free ones.

Measured on torch 2.13: neither breaks. Nothing here may be flagged, and Dynamo must not break.
"""
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.drop = nn.Dropout(0.0)
        self.act = nn.ReLU()

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.drop(self.act(hidden))


class Switch(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.full = nn.Linear(dim, dim)
        self.sparse = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        layer = self.full if hidden.shape[0] < 4 else self.sparse
        unit_norm = nn.LayerNorm(hidden.shape[-1], elementwise_affine=False)
        return Gate()(unit_norm(layer(hidden)) + self.norm(hidden))


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Switch(), [(torch.randn(2, 4),)]


compiled = torch.compile(Switch())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
