"""torchaudio functional.spectrogram called with the deprecated return_complex: warnings.warn on every call.

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/functional.py:50-140 (spectrogram, amplitude_to_DB)
Kept: spectrogram's `if return_complex is not None: warnings.warn(...)`, the
`pad > 0` constant pad, batch pack/unpack around torch.stft(return_complex=True),
window normalisation, the power switch (None / 1.0 / pow); amplitude_to_DB with
the top_db clamp on packed channels. The caller is legacy feature code written
for torchaudio < 2.1 that still passes return_complex=True.
Simplified: n_fft 8, hop 4; the "model" after the features is a linear layer.
"""
import math
import warnings
from typing import Optional

import torch
from torch import Tensor


def spectrogram(
    waveform: Tensor,
    pad: int,
    window: Tensor,
    n_fft: int,
    hop_length: int,
    win_length: int,
    power: Optional[float],
    normalized: bool,
    center: bool = True,
    pad_mode: str = "reflect",
    onesided: bool = True,
    return_complex: Optional[bool] = None,
) -> Tensor:
    if return_complex is not None:
        warnings.warn(
            "`return_complex` argument is now deprecated and is not effective."
            "`torchaudio.functional.spectrogram(power=None)` always returns a tensor with "
            "complex dtype. Please remove the argument in the function call."
        )

    if pad > 0:
        waveform = torch.nn.functional.pad(waveform, (pad, pad), "constant")

    shape = waveform.size()
    waveform = waveform.reshape(-1, shape[-1])

    spec_f = torch.stft(
        input=waveform,
        n_fft=n_fft,
        hop_length=hop_length,
        win_length=win_length,
        window=window,
        center=center,
        pad_mode=pad_mode,
        normalized=False,
        onesided=onesided,
        return_complex=True,
    )

    spec_f = spec_f.reshape(shape[:-1] + spec_f.shape[-2:])

    if normalized:
        spec_f /= window.pow(2.0).sum().sqrt()
    if power is not None:
        if power == 1.0:
            return spec_f.abs()
        return spec_f.abs().pow(power)
    return spec_f


def amplitude_to_DB(x: Tensor, multiplier: float, amin: float, db_multiplier: float,
                    top_db: Optional[float] = None) -> Tensor:
    x_db = multiplier * torch.log10(torch.clamp(x, min=amin))
    x_db -= multiplier * db_multiplier

    if top_db is not None:
        shape = x_db.size()
        packed_channels = shape[-3] if x_db.dim() > 2 else 1
        x_db = x_db.reshape(-1, packed_channels, shape[-2], shape[-1])

        x_db = torch.max(x_db, (x_db.amax(dim=(-3, -2, -1)) - top_db).view(-1, 1, 1, 1))

        x_db = x_db.reshape(shape)

    return x_db


class LogSpecClassifier(torch.nn.Module):
    def __init__(self, n_fft=8, hop_length=4, n_classes=3, top_db=80.0):
        super().__init__()
        self.n_fft = n_fft
        self.hop_length = hop_length
        self.register_buffer("window", torch.hann_window(n_fft))
        self.top_db = top_db
        self.amin = 1e-10
        self.db_multiplier = math.log10(max(self.amin, 1.0))
        self.head = torch.nn.Linear(n_fft // 2 + 1, n_classes)

    def forward(self, waveform):
        spec = spectrogram(
            waveform, 0, self.window, self.n_fft, self.hop_length, self.n_fft, 2.0, False, return_complex=True
        )
        spec_db = amplitude_to_DB(spec, 10.0, self.amin, self.db_multiplier, self.top_db)
        return self.head(spec_db.transpose(-1, -2)).mean(dim=-2)


def train(steps=2):
    model = LogSpecClassifier()
    compiled = torch.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        loss = compiled(torch.randn(2, 1, 32)).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()


def make():
    torch.manual_seed(0)
    return LogSpecClassifier(), [(torch.randn(2, 1, 32),), (torch.randn(32),)]
