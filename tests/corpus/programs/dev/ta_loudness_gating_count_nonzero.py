"""torchaudio loudness (ITU-R BS.1770): block energies, absolute and relative gating with count_nonzero (no break).

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/functional.py:1535-1593
Kept: the channel-count ValueError, gate/step sizes from Python round(), the
unfold block energy, channel weights sliced by channel count, the two gating
stages with torch.count_nonzero(dim=-1) and the LKFS formula.
Simplified: the K-weighting biquads are left out (pure energy); 2 channels,
sample rate 100.
"""
import torch
from torch import Tensor


def loudness(waveform: Tensor, sample_rate: int):
    if waveform.size(-2) > 5:
        raise ValueError("Only up to 5 channels are supported.")
    gate_duration = 0.4
    overlap = 0.75
    gamma_abs = -70.0
    kweight_bias = -0.691
    gate_samples = int(round(gate_duration * sample_rate))
    step = int(round(gate_samples * (1 - overlap)))
    energy = torch.square(waveform).unfold(-1, gate_samples, step)
    energy = torch.mean(energy, dim=-1)
    g = torch.tensor([1.0, 1.0, 1.0, 1.41, 1.41], dtype=waveform.dtype, device=waveform.device)
    g = g[: energy.size(-2)]
    energy_weighted = torch.sum(g.unsqueeze(-1) * energy, dim=-2)
    loudness = -0.691 + 10 * torch.log10(energy_weighted)
    gated_blocks = loudness > gamma_abs
    gated_blocks = gated_blocks.unsqueeze(-2)
    energy_filtered = torch.sum(gated_blocks * energy, dim=-1) / torch.count_nonzero(gated_blocks, dim=-1)
    energy_weighted = torch.sum(g * energy_filtered, dim=-1)
    gamma_rel = kweight_bias + 10 * torch.log10(energy_weighted) - 10
    gated_blocks = torch.logical_and(gated_blocks.squeeze(-2), loudness > gamma_rel.unsqueeze(-1))
    gated_blocks = gated_blocks.unsqueeze(-2)
    energy_filtered = torch.sum(gated_blocks * energy, dim=-1) / torch.count_nonzero(gated_blocks, dim=-1)
    energy_weighted = torch.sum(g * energy_filtered, dim=-1)
    LKFS = kweight_bias + 10 * torch.log10(energy_weighted)
    return LKFS


class Loudness(torch.nn.Module):
    def __init__(self, sample_rate: int):
        super().__init__()
        self.sample_rate = sample_rate

    def forward(self, wavefrom: Tensor):
        return loudness(wavefrom, self.sample_rate)


meter = Loudness(100)
meter = torch.compile(meter, dynamic=False)


def make():
    torch.manual_seed(0)
    return Loudness(100), [(torch.randn(1, 2, 200) * 0.1,)]
