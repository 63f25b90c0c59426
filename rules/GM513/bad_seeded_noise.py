"""GM513 bad: a noise-injection layer keeps its own seeded `torch.Generator` and draws through a
`randn_tensor`-style helper.

Dynamo cannot pass a generator to `torch.randn` (GB0055): the graph breaks at the helper's op.
"""
import torch
from torch import nn


def randn_tensor(shape, generator=None, device=None, dtype=None):
    """Draw standard-normal noise, from `generator` when one is given."""
    return torch.randn(shape, generator=generator, device=device, dtype=dtype)


class NoiseInjection(nn.Module):
    def __init__(self, dim: int = 4, seed: int = 0) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.scale = nn.Parameter(torch.full((dim,), 0.1))
        self.generator = torch.Generator().manual_seed(seed)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        h = self.proj(hidden)
        noise = randn_tensor(h.shape, generator=self.generator, device=h.device, dtype=h.dtype)
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
