"""GM512 bad: flash-attention's `maybe_align` tests `x.data_ptr() % alignment` before a fused layer norm.

Dynamo cannot compute with a data pointer: the `%` raises inside Dynamo, which gives up on the frame (GB0088).
"""
import torch
import torch.nn.functional as F
from torch import nn


def maybe_align(x, alignment_in_bytes=16):
    """Assume that x already has last dim divisible by alignment_in_bytes"""
    return x if x.data_ptr() % alignment_in_bytes == 0 else x.clone()


class LayerNorm(nn.Module):
    def __init__(self, dim: int = 8, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = maybe_align(x.contiguous(), 16)
        return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return LayerNorm(), [(torch.randn(2, 3, 8),)]


compiled = torch.compile(LayerNorm())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
