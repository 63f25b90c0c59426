"""torchaudio Fade: string-selected fade shapes over linspace ramps sized by the waveform length (no break).

Source: pytorch/audio@v2.11.0:src/torchaudio/transforms/_transforms.py:1090-1173
Kept: forward (waveform length from size(), fade-in * fade-out * waveform),
_fade_in / _fade_out with their five `if self.fade_shape == ...` branches,
linspace / ones / cat / clamp_.
Simplified: fade lengths 3 and 4 samples; two transforms with different shapes.
"""
import math

import torch
from torch import Tensor


class Fade(torch.nn.Module):
    def __init__(self, fade_in_len: int = 0, fade_out_len: int = 0, fade_shape: str = "linear") -> None:
        super().__init__()
        self.fade_in_len = fade_in_len
        self.fade_out_len = fade_out_len
        self.fade_shape = fade_shape

    def forward(self, waveform: Tensor) -> Tensor:
        waveform_length = waveform.size()[-1]
        device = waveform.device
        return self._fade_in(waveform_length, device) * self._fade_out(waveform_length, device) * waveform

    def _fade_in(self, waveform_length: int, device: torch.device) -> Tensor:
        fade = torch.linspace(0, 1, self.fade_in_len, device=device)
        ones = torch.ones(waveform_length - self.fade_in_len, device=device)
        if self.fade_shape == "linear":
            fade = fade
        if self.fade_shape == "exponential":
            fade = torch.pow(2, (fade - 1)) * fade
        if self.fade_shape == "logarithmic":
            fade = torch.log10(0.1 + fade) + 1
        if self.fade_shape == "quarter_sine":
            fade = torch.sin(fade * math.pi / 2)
        if self.fade_shape == "half_sine":
            fade = torch.sin(fade * math.pi - math.pi / 2) / 2 + 0.5
        return torch.cat((fade, ones)).clamp_(0, 1)

    def _fade_out(self, waveform_length: int, device: torch.device) -> Tensor:
        fade = torch.linspace(0, 1, self.fade_out_len, device=device)
        ones = torch.ones(waveform_length - self.fade_out_len, device=device)
        if self.fade_shape == "linear":
            fade = -fade + 1
        if self.fade_shape == "exponential":
            fade = torch.pow(2, -fade) * (1 - fade)
        if self.fade_shape == "logarithmic":
            fade = torch.log10(1.1 - fade) + 1
        if self.fade_shape == "quarter_sine":
            fade = torch.sin(fade * math.pi / 2 + math.pi / 2)
        if self.fade_shape == "half_sine":
            fade = torch.sin(fade * math.pi + math.pi / 2) / 2 + 0.5
        return torch.cat((ones, fade)).clamp_(0, 1)


chain = torch.nn.Sequential(Fade(3, 4, "logarithmic"), Fade(2, 2, "half_sine"))
chain = torch.compile(chain)


def make():
    torch.manual_seed(0)
    return torch.nn.Sequential(Fade(3, 4, "logarithmic"), Fade(2, 2, "half_sine")), [(torch.randn(2, 12),)]
