"""torchaudio Vol transforms of the three gain types in one augmentation chain (no break expected).

Source: pytorch/audio@v2.11.0:src/torchaudio/transforms/_transforms.py (Vol); src/torchaudio/functional/functional.py (gain)
Kept: Vol.__init__'s ValueError for a negative amplitude/power gain, forward's
three independent `if self.gain_type == ...` checks (amplitude multiply, db via
F.gain, power via F.gain(10 * math.log10(gain))), the final clamp to [-1, 1];
gain's `if gain_db == 0: return waveform` early exit and 10 ** (gain_db / 20).
Simplified: the chain is an nn.Sequential compiled with mode="reduce-overhead".
"""
import math

import torch
from torch import Tensor


def gain(waveform: Tensor, gain_db: float = 1.0) -> Tensor:
    if gain_db == 0:
        return waveform

    ratio = 10 ** (gain_db / 20)

    return waveform * ratio


class Vol(torch.nn.Module):
    def __init__(self, gain: float, gain_type: str = "amplitude"):
        super(Vol, self).__init__()
        self.gain = gain
        self.gain_type = gain_type

        if gain_type in ["amplitude", "power"] and gain < 0:
            raise ValueError("If gain_type = amplitude or power, gain must be positive.")

    def forward(self, waveform: Tensor) -> Tensor:
        if self.gain_type == "amplitude":
            waveform = waveform * self.gain

        if self.gain_type == "db":
            waveform = gain(waveform, self.gain)

        if self.gain_type == "power":
            waveform = gain(waveform, 10 * math.log10(self.gain))

        return torch.clamp(waveform, -1, 1)


def build_chain():
    return torch.nn.Sequential(
        Vol(0.8, "amplitude"),
        Vol(-3.0, "db"),
        Vol(0.0, "db"),
        Vol(2.0, "power"),
    )


augment = torch.compile(build_chain(), mode="reduce-overhead")


def make():
    torch.manual_seed(0)
    return build_chain(), [(torch.rand(2, 32) * 2 - 1,), (torch.rand(1, 1, 16) * 4 - 2,)]
