"""torchaudio TimeStretch / phase_vocoder: `rate == 1.0` shortcut, arange with a float step, complex angle/abs/polar arithmetic (no break expected).

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/functional.py:732-803; src/torchaudio/transforms/_transforms.py:1030-1092
Kept: phase_vocoder verbatim and TimeStretch (the phase_advance buffer from
linspace, the overriding_rate switch in forward), applied to a complex STFT.
Simplified: n_freq 5, hop 2; the complex input is built from randn.
"""
import math
from typing import Optional

import torch
from torch import Tensor


def phase_vocoder(complex_specgrams: Tensor, rate: float, phase_advance: Tensor) -> Tensor:
    if rate == 1.0:
        return complex_specgrams
    shape = complex_specgrams.size()
    complex_specgrams = complex_specgrams.reshape([-1] + list(shape[-2:]))
    real_dtype = torch.real(complex_specgrams).dtype
    time_steps = torch.arange(0, complex_specgrams.size(-1), rate, device=complex_specgrams.device, dtype=real_dtype)
    alphas = time_steps % 1.0
    phase_0 = complex_specgrams[..., :1].angle()
    complex_specgrams = torch.nn.functional.pad(complex_specgrams, [0, 2])
    complex_specgrams_0 = complex_specgrams.index_select(-1, time_steps.long())
    complex_specgrams_1 = complex_specgrams.index_select(-1, (time_steps + 1).long())
    angle_0 = complex_specgrams_0.angle()
    angle_1 = complex_specgrams_1.angle()
    norm_0 = complex_specgrams_0.abs()
    norm_1 = complex_specgrams_1.abs()
    phase = angle_1 - angle_0 - phase_advance
    phase = phase - 2 * math.pi * torch.round(phase / (2 * math.pi))
    phase = phase + phase_advance
    phase = torch.cat([phase_0, phase[..., :-1]], dim=-1)
    phase_acc = torch.cumsum(phase, -1)
    mag = alphas * norm_1 + (1 - alphas) * norm_0
    complex_specgrams_stretch = torch.polar(mag, phase_acc)
    complex_specgrams_stretch = complex_specgrams_stretch.reshape(shape[:-2] + complex_specgrams_stretch.shape[1:])
    return complex_specgrams_stretch


class TimeStretch(torch.nn.Module):
    def __init__(self, hop_length: Optional[int] = None, n_freq: int = 201, fixed_rate: Optional[float] = None) -> None:
        super().__init__()
        self.fixed_rate = fixed_rate
        n_fft = (n_freq - 1) * 2
        hop_length = hop_length if hop_length is not None else n_fft // 2
        self.register_buffer("phase_advance", torch.linspace(0, math.pi * hop_length, n_freq)[..., None])

    def forward(self, complex_specgrams: Tensor, overriding_rate: Optional[float] = None) -> Tensor:
        if overriding_rate is None:
            if self.fixed_rate is None:
                raise ValueError("If no fixed_rate is specified, must pass a valid rate to the forward method.")
            rate = self.fixed_rate
        else:
            rate = overriding_rate
        return phase_vocoder(complex_specgrams, rate, self.phase_advance)


stretch = torch.compile(TimeStretch(hop_length=2, n_freq=5, fixed_rate=1.3))


def make():
    torch.manual_seed(0)
    spec = torch.complex(torch.randn(1, 5, 6), torch.randn(1, 5, 6))
    return TimeStretch(hop_length=2, n_freq=5, fixed_rate=1.3), [(spec,), (spec, 1.0)]
