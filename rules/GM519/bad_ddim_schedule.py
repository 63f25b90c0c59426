"""GM519 bad: a DDIM sampler's schedule (the shape of Latent Diffusion's `make_schedule`) computed
with NumPy on the model's `alphas_cumprod` tensor and handed to `to_torch`, which clones it.

Eagerly `np.sqrt(t)` of a CPU tensor is a tensor. Under `torch.compile` it is an ndarray, and
`.clone()` on it fails the compilation ("RuntimeError when making fake tensor call", GB4315):
an error, not a graph break.
"""
import numpy as np
import torch
from torch import nn


class Sampler(nn.Module):
    def __init__(self, steps: int = 8) -> None:
        super().__init__()
        self.register_buffer("alphas_cumprod", torch.cumprod(torch.linspace(0.99, 0.9, steps), 0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        to_torch = lambda t: t.clone().detach().to(torch.float32)
        sqrt_alphas = to_torch(np.sqrt(self.alphas_cumprod.cpu()))
        sqrt_one_minus = to_torch(np.sqrt(1. - self.alphas_cumprod.cpu()))
        return sqrt_alphas[-1] * x + sqrt_one_minus[-1] * torch.ones_like(x)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Sampler(), [(torch.randn(2, 4),)]


sampler = torch.compile(Sampler())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
