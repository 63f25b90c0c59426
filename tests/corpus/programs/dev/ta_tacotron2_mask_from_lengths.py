"""torchaudio Tacotron2: `_get_mask_from_lengths` uses `torch.max(lengths).item()` for the arange bound.

Source: pytorch/audio@v2.11.0:src/torchaudio/models/tacotron2.py:105-119,953-1005
Kept: _get_mask_from_lengths verbatim, and Tacotron2.forward's use of it to
mask the mel outputs and the gate outputs with masked_fill (mask expanded
over the mel channels, permuted).
Simplified: encoder/decoder/postnet are linear layers; n_mels 4.
"""
import torch
from torch import Tensor, nn


def _get_mask_from_lengths(lengths: Tensor) -> Tensor:
    max_len = torch.max(lengths).item()
    ids = torch.arange(0, max_len, device=lengths.device, dtype=lengths.dtype)
    mask = (ids < lengths.unsqueeze(1)).byte()
    mask = torch.le(mask, 0)
    return mask


class Tacotron2(nn.Module):
    def __init__(self, n_mels=4):
        super().__init__()
        self.n_mels = n_mels
        self.decoder = nn.Linear(n_mels, n_mels)
        self.postnet = nn.Linear(n_mels, n_mels)
        self.gate = nn.Linear(n_mels, 1)
        self.mask_padding = True

    def forward(self, mel_specgram: Tensor, mel_specgram_lengths: Tensor):
        mel = self.decoder(mel_specgram.transpose(1, 2))
        mel_postnet = mel + self.postnet(mel)
        gate_outputs = self.gate(mel).squeeze(-1)
        mel_specgram, mel_specgram_postnet = mel.transpose(1, 2), mel_postnet.transpose(1, 2)
        if self.mask_padding:
            mask = _get_mask_from_lengths(mel_specgram_lengths)
            mask = mask.expand(self.n_mels, mask.size(0), mask.size(1))
            mask = mask.permute(1, 0, 2)
            mel_specgram = mel_specgram.masked_fill(mask, 0.0)
            mel_specgram_postnet = mel_specgram_postnet.masked_fill(mask, 0.0)
            gate_outputs = gate_outputs.masked_fill(mask[:, 0, :], 1e3)
        return mel_specgram, mel_specgram_postnet, gate_outputs


tacotron2 = torch.compile(Tacotron2(), dynamic=True)


def make():
    torch.manual_seed(0)
    return Tacotron2(), [(torch.randn(2, 4, 5), torch.tensor([5, 3]))]
