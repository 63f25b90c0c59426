"""torchaudio Conformer: `_lengths_to_padding_mask` sizes the mask with `int(torch.max(lengths).item())`.

Source: pytorch/audio@v2.11.0:src/torchaudio/models/conformer.py:9-15,215-293
Kept: _lengths_to_padding_mask, Conformer.forward's transpose / per-layer
call with the padding mask / (output, lengths) tuple.
Simplified: each conformer layer is a masked linear; input dim 8, 2 layers.
"""
from typing import Tuple

import torch


def _lengths_to_padding_mask(lengths: torch.Tensor) -> torch.Tensor:
    batch_size = lengths.shape[0]
    max_length = int(torch.max(lengths).item())
    padding_mask = torch.arange(max_length, device=lengths.device, dtype=lengths.dtype).expand(
        batch_size, max_length
    ) >= lengths.unsqueeze(1)
    return padding_mask


class ConformerLayer(torch.nn.Module):
    def __init__(self, input_dim):
        super().__init__()
        self.ffn = torch.nn.Linear(input_dim, input_dim)

    def forward(self, input, key_padding_mask):
        x = self.ffn(input)
        return x.masked_fill(key_padding_mask.transpose(0, 1)[..., None], 0.0) + input


class Conformer(torch.nn.Module):
    def __init__(self, input_dim=8, num_layers=2):
        super().__init__()
        self.conformer_layers = torch.nn.ModuleList([ConformerLayer(input_dim) for _ in range(num_layers)])

    def forward(self, input: torch.Tensor, lengths: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        encoder_padding_mask = _lengths_to_padding_mask(lengths)
        x = input.transpose(0, 1)
        for layer in self.conformer_layers:
            x = layer(x, encoder_padding_mask)
        return x.transpose(0, 1), lengths


conformer = torch.compile(Conformer())


def make():
    torch.manual_seed(0)
    return Conformer(), [(torch.randn(2, 6, 8), torch.tensor([6, 4]))]
