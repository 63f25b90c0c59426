"""GM507 bad: a dropout-style perturbation replayed by saving and restoring torch's RNG state inside forward.

`torch.get_rng_state` and `torch.set_rng_state` live in `torch.random`, a module Dynamo skips: each call
ends the graph (GB0007). Take the state outside the compiled function, or draw from a `torch.Generator`.
"""
import torch
from torch import nn


class ReplayedNoise(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        state = torch.get_rng_state()
        first = h + torch.rand_like(h)
        torch.set_rng_state(state)
        return first - torch.rand_like(h)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return ReplayedNoise(), [(torch.randn(2, 4),)]


compiled = torch.compile(ReplayedNoise())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
