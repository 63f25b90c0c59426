"""GM513 negative: the same layer drawing from the global RNG (`generator=None`), and reading the
module-level generator's device only.

Nothing here may be flagged, and Dynamo must not break.
"""
import torch
from torch import nn

generator = torch.Generator().manual_seed(0)


def randn_tensor(shape, generator=None, device=None, dtype=None):
    return torch.randn(shape, generator=generator, device=device, dtype=dtype)


class NoiseInjection(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.scale = nn.Parameter(torch.full((dim,), 0.1))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        h = self.proj(hidden)
        noise = randn_tensor(h.shape, generator=None, device=generator.device, dtype=h.dtype)
        return h + self.scale * noise


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return NoiseInjection(), [(torch.randn(2, 4),)]


compiled = torch.compile(NoiseInjection())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
