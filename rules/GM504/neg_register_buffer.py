"""GM504 negative: buffers from `register_buffer`, re-assigned in forward, and a plain tensor attribute.

Measured on torch 2.13: neither breaks. Nothing here may be flagged, and Dynamo must not break.
"""
import torch
from torch import nn


class Embeddings(nn.Module):
    def __init__(self, n_positions: int = 16, d_model: int = 8) -> None:
        super().__init__()
        self.register_buffer("pos_encoding", torch.randn(n_positions, d_model), persistent=False)
        self.scale = torch.ones(d_model)

    def forward(self, inputs_embeds: torch.Tensor) -> torch.Tensor:
        self.pos_encoding = self.pos_encoding.to(dtype=inputs_embeds.dtype)
        self.scale = self.scale.to(inputs_embeds.dtype)
        return (inputs_embeds + self.pos_encoding[: inputs_embeds.shape[1]]) * self.scale


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Embeddings(), [(torch.randn(1, 5, 8),)]


compiled = torch.compile(Embeddings())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
