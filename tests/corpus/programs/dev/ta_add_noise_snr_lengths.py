"""torchaudio add_noise: leading-dims and length ValueErrors on shapes, optional length mask, SNR scaling (no break).

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/functional.py:2317-2382
Kept: the ndim-chain check, the L != noise length check, the lengths mask
via arange < lengths, vector_norm energies, the dB difference and scaling;
the AddNoise transform wrapper.
Simplified: batch of 2 waveforms of 10 samples.
"""
from typing import Optional

import torch


def add_noise(waveform: torch.Tensor, noise: torch.Tensor, snr: torch.Tensor, lengths: Optional[torch.Tensor] = None) -> torch.Tensor:
    if not (waveform.ndim - 1 == noise.ndim - 1 == snr.ndim and (lengths is None or lengths.ndim == snr.ndim)):
        raise ValueError("Input leading dimensions don't match.")
    L = waveform.size(-1)
    if L != noise.size(-1):
        raise ValueError(f"Length dimensions of waveform and noise don't match (got {L} and {noise.size(-1)}).")
    if lengths is not None:
        mask = torch.arange(0, L, device=lengths.device).expand(waveform.shape) < lengths.unsqueeze(-1)
        masked_waveform = waveform * mask
        masked_noise = noise * mask
    else:
        masked_waveform = waveform
        masked_noise = noise
    energy_signal = torch.linalg.vector_norm(masked_waveform, ord=2, dim=-1) ** 2
    energy_noise = torch.linalg.vector_norm(masked_noise, ord=2, dim=-1) ** 2
    original_snr_db = 10 * (torch.log10(energy_signal) - torch.log10(energy_noise))
    scale = 10 ** ((original_snr_db - snr) / 20.0)
    scaled_noise = scale.unsqueeze(-1) * noise
    return waveform + scaled_noise


class AddNoise(torch.nn.Module):
    def forward(self, waveform, noise, snr, lengths=None):
        return add_noise(waveform, noise, snr, lengths)


augment = torch.compile(AddNoise())


def make():
    torch.manual_seed(0)
    wav, noise = torch.randn(2, 10), torch.randn(2, 10)
    snr = torch.tensor([10.0, 5.0])
    return AddNoise(), [(wav, noise, snr), (wav, noise, snr, torch.tensor([10, 6]))]
