"""GM506 bad: a learned-looking scale created with `nn.Parameter` on every forward, and a norm built there too."""
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        h = self.proj(features).relu()
        scale = nn.Parameter(torch.ones(h.shape[-1]))
        norm = nn.LayerNorm(h.shape[-1])
        return norm(h) * scale


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Head(), [(torch.randn(2, 4),)]


compiled = torch.compile(Head())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
