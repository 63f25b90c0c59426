"""torchaudio griffinlim: momentum ValueError, rand/constant complex init, a Python n_iter loop of istft/stft with momentum (no break expected).

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/functional.py:245-353
Kept: _get_complex_dtype, griffinlim verbatim (the momentum range check and
rescale, batch packing, pow(1/power), rand_init switch, tprev, the loop with
istft/stft, `if momentum:` on the Python float, phase normalisation, final
istft and unpack) and the GriffinLim transform with its window buffer.
Simplified: n_fft 8, hop 2, 2 iterations; rand_init False for determinism.
"""
from typing import Optional

import torch
from torch import Tensor


def _get_complex_dtype(real_dtype: torch.dtype):
    if real_dtype == torch.double:
        return torch.cdouble
    if real_dtype == torch.float:
        return torch.cfloat
    if real_dtype == torch.half:
        return torch.complex32
    raise ValueError(f"Unexpected dtype {real_dtype}")


def griffinlim(specgram: Tensor, window: Tensor, n_fft: int, hop_length: int, win_length: int, power: float, n_iter: int, momentum: float, length: Optional[int], rand_init: bool) -> Tensor:
    if not 0 <= momentum < 1:
        raise ValueError("momentum must be in range [0, 1). Found: {}".format(momentum))
    momentum = momentum / (1 + momentum)
    shape = specgram.size()
    specgram = specgram.reshape([-1] + list(shape[-2:]))
    specgram = specgram.pow(1 / power)
    if rand_init:
        angles = torch.rand(specgram.size(), dtype=_get_complex_dtype(specgram.dtype), device=specgram.device)
    else:
        angles = torch.full(specgram.size(), 1, dtype=_get_complex_dtype(specgram.dtype), device=specgram.device)
    tprev = torch.tensor(0.0, dtype=specgram.dtype, device=specgram.device)
    for _ in range(n_iter):
        inverse = torch.istft(specgram * angles, n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window, length=length)
        rebuilt = torch.stft(input=inverse, n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window, center=True,
                             pad_mode="reflect", normalized=False, onesided=True, return_complex=True)
        angles = rebuilt
        if momentum:
            angles = angles - tprev.mul_(momentum)
        angles = angles.div(angles.abs().add(1e-16))
        tprev = rebuilt
    waveform = torch.istft(specgram * angles, n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window, length=length)
    waveform = waveform.reshape(shape[:-2] + waveform.shape[-1:])
    return waveform


class GriffinLim(torch.nn.Module):
    def __init__(self, n_fft: int = 8, n_iter: int = 2, hop_length: int = 2, power: float = 2.0, momentum: float = 0.99, rand_init: bool = False):
        super().__init__()
        self.n_fft, self.n_iter, self.hop_length, self.win_length = n_fft, n_iter, hop_length, n_fft
        self.register_buffer("window", torch.hann_window(n_fft))
        self.length = None
        self.power, self.momentum, self.rand_init = power, momentum, rand_init

    def forward(self, specgram: Tensor) -> Tensor:
        return griffinlim(specgram, self.window, self.n_fft, self.hop_length, self.win_length, self.power, self.n_iter, self.momentum, self.length, self.rand_init)


vocoder = torch.compile(GriffinLim())


def make():
    torch.manual_seed(0)
    return GriffinLim(), [(torch.rand(1, 5, 9),)]
