"""torchaudio preprocessing chain: Fade -> Spectrogram -> AmplitudeToDB in an nn.Sequential (no break expected).

Source: pytorch/audio@v2.11.0:src/torchaudio/transforms/_transforms.py:30-120,290-340,1100-1190
Kept: Fade's _fade_in/_fade_out with the five fade_shape `if`s (not elif, as
written), linspace/ones/cat/clamp_, `waveform.size()[-1]`; Spectrogram's
window buffer, win/hop defaults and forward into functional.spectrogram
(pad, pack, stft, unpack, normalized, power); AmplitudeToDB's top_db
ValueError, multiplier by stype, db_multiplier, amplitude_to_DB with top_db.
Simplified: n_fft 8; the chain is built the way the torchaudio augmentation
tutorial builds it.
"""
import math
from typing import Callable, Optional

import torch
from torch import Tensor


def spectrogram(waveform, pad, window, n_fft, hop_length, win_length, power, normalized, center=True,
                pad_mode="reflect", onesided=True):
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


def amplitude_to_DB(x, multiplier, amin, db_multiplier, top_db=None):
    x_db = multiplier * torch.log10(torch.clamp(x, min=amin))
    x_db -= multiplier * db_multiplier
    if top_db is not None:
        shape = x_db.size()
        packed_channels = shape[-3] if x_db.dim() > 2 else 1
        x_db = x_db.reshape(-1, packed_channels, shape[-2], shape[-1])
        x_db = torch.max(x_db, (x_db.amax(dim=(-3, -2, -1)) - top_db).view(-1, 1, 1, 1))
        x_db = x_db.reshape(shape)
    return x_db


class Fade(torch.nn.Module):
    def __init__(self, fade_in_len: int = 0, fade_out_len: int = 0, fade_shape: str = "linear") -> None:
        super(Fade, self).__init__()
        self.fade_in_len = fade_in_len
        self.fade_out_len = fade_out_len
        self.fade_shape = fade_shape

    def forward(self, waveform: Tensor) -> Tensor:
        waveform_length = waveform.size()[-1]
        device = waveform.device
        return (
            self._fade_in(waveform_length, device).to(device)
            * self._fade_out(waveform_length, device).to(device)
            * waveform
        )

    def _fade_in(self, waveform_length: int, device: torch.device) -> Tensor:
        fade = torch.linspace(0, 1, self.fade_in_len, device=device)
        ones = torch.ones(waveform_length - self.fade_in_len, device=device)

        if self.fade_shape == "linear":
            fade = fade

        if self.fade_shape == "exponential":
            fade = torch.pow(2, (fade - 1) * 5)

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
            fade = torch.pow(2, -fade * 5)

        if self.fade_shape == "logarithmic":
            fade = torch.log10(1.1 - fade) + 1

        if self.fade_shape == "quarter_sine":
            fade = torch.sin(fade * math.pi / 2 + math.pi / 2)

        if self.fade_shape == "half_sine":
            fade = torch.sin(fade * math.pi + math.pi / 2) / 2 + 0.5

        return torch.cat((ones, fade)).clamp_(0, 1)


class Spectrogram(torch.nn.Module):
    __constants__ = ["n_fft", "win_length", "hop_length", "pad", "power", "normalized"]

    def __init__(self, n_fft: int = 400, win_length: Optional[int] = None, hop_length: Optional[int] = None,
                 pad: int = 0, window_fn: Callable[..., Tensor] = torch.hann_window, power: Optional[float] = 2.0,
                 normalized: bool = False, wkwargs: Optional[dict] = None, center: bool = True,
                 pad_mode: str = "reflect", onesided: bool = True) -> None:
        super().__init__()
        self.n_fft = n_fft
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        window = window_fn(self.win_length) if wkwargs is None else window_fn(self.win_length, **wkwargs)
        self.register_buffer("window", window)
        self.pad = pad
        self.power = power
        self.normalized = normalized
        self.center = center
        self.pad_mode = pad_mode
        self.onesided = onesided

    def forward(self, waveform: Tensor) -> Tensor:
        return spectrogram(
            waveform,
            self.pad,
            self.window,
            self.n_fft,
            self.hop_length,
            self.win_length,
            self.power,
            self.normalized,
            self.center,
            self.pad_mode,
            self.onesided,
        )


class AmplitudeToDB(torch.nn.Module):
    __constants__ = ["multiplier", "amin", "ref_value", "db_multiplier"]

    def __init__(self, stype: str = "power", top_db: Optional[float] = None) -> None:
        super(AmplitudeToDB, self).__init__()
        self.stype = stype
        if top_db is not None and top_db < 0:
            raise ValueError("top_db must be positive value")
        self.top_db = top_db
        self.multiplier = 10.0 if stype == "power" else 20.0
        self.amin = 1e-10
        self.ref_value = 1.0
        self.db_multiplier = math.log10(max(self.amin, self.ref_value))

    def forward(self, x: Tensor) -> Tensor:
        return amplitude_to_DB(x, self.multiplier, self.amin, self.db_multiplier, self.top_db)


def build_transform(fade_shape="half_sine"):
    return torch.nn.Sequential(
        Fade(fade_in_len=4, fade_out_len=8, fade_shape=fade_shape),
        Spectrogram(n_fft=8, pad=2, normalized=True),
        AmplitudeToDB(stype="power", top_db=80.0),
    )


transform = torch.compile(build_transform(), dynamic=False)


def make():
    torch.manual_seed(0)
    return build_transform(), [(torch.randn(2, 40),), (torch.randn(1, 2, 24),)]
