"""GM504 bad: CTRL's positional encoding, an `nn.Buffer` re-assigned in forward.

Source: huggingface/transformers@v5.23.0:src/transformers/models/ctrl/modeling_ctrl.py:229,317-318
"""
import torch
from torch import nn


def positional_encoding(position: int, d_model: int) -> torch.Tensor:
    angles = torch.arange(position).unsqueeze(1) / (10000 ** (torch.arange(d_model) / d_model))
    return torch.cat([torch.sin(angles[:, 0::2]), torch.cos(angles[:, 1::2])], dim=-1)


class Embeddings(nn.Module):
    def __init__(self, n_positions: int = 16, d_model: int = 8) -> None:
        super().__init__()
        self.pos_encoding = nn.Buffer(positional_encoding(n_positions, d_model), persistent=False)

    def forward(self, inputs_embeds: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        # `self.pos_encoding` won't be sent to the correct device and dtype along the model, so we do it manually.
        self.pos_encoding = self.pos_encoding.to(device=inputs_embeds.device, dtype=inputs_embeds.dtype)
        pos_embeds = self.pos_encoding[position_ids, :]
        return inputs_embeds + pos_embeds


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Embeddings(), [(torch.randn(1, 5, 8), torch.arange(5).unsqueeze(0))]


compiled = torch.compile(Embeddings())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
