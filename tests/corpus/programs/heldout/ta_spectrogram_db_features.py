"""torchaudio Spectrogram -> AmplitudeToDB feature front-end: stft, norm flags, top_db clamp (no break).

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/functional.py:54-145,228-242,356-404
Kept: spectrogram (the deprecated return_complex warning, pad > 0, _get_spec_norms
with torch.jit.isinstance, batch packing, torch.stft, window_norm division, the
power switch), amplitude_to_DB (clamp/log10, db_multiplier, top_db packing and
amax), and the transforms' module wrappers.
Simplified: n_fft 8, hop 4, hann window buffer; 2x64 waveform.
"""
import math
import warnings
from typing import Optional, Union

import torch
from torch import Tensor


def _get_spec_norms(normalized: Union[str, bool]):
    frame_length_norm, window_norm = False, False
    if torch.jit.isinstance(normalized, str):
        if normalized not in ["frame_length", "window"]:
            raise ValueError("Invalid normalized parameter: {}".format(normalized))
        if normalized == "frame_length":
            frame_length_norm = True
        elif normalized == "window":
            window_norm = True
    elif torch.jit.isinstance(normalized, bool):
        if normalized:
            window_norm = True
    else:
        raise TypeError("Input type not supported")
    return frame_length_norm, window_norm


def spectrogram(waveform, pad, window, n_fft, hop_length, win_length, power, normalized, center=True, pad_mode="reflect", onesided=True, return_complex=None):
    if return_complex is not None:
        warnings.warn("`return_complex` argument is now deprecated and is not effective.")
    if pad > 0:
        waveform = torch.nn.functional.pad(waveform, (pad, pad), "constant")
    frame_length_norm, window_norm = _get_spec_norms(normalized)
    shape = waveform.size()
    waveform = waveform.reshape(-1, shape[-1])
    spec_f = torch.stft(input=waveform, n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window,
                        center=center, pad_mode=pad_mode, normalized=frame_length_norm, onesided=onesided, return_complex=True)
    spec_f = spec_f.reshape(shape[:-1] + spec_f.shape[-2:])
    if window_norm:
        spec_f /= window.pow(2.0).sum().sqrt()
    if power is not None:
        if power == 1.0:
            return spec_f.abs()
        return spec_f.abs().pow(power)
    return spec_f


def amplitude_to_DB(x: Tensor, multiplier: float, amin: float, db_multiplier: float, top_db: Optional[float] = None) -> Tensor:
    x_db = multiplier * torch.log10(torch.clamp(x, min=amin))
    x_db -= multiplier * db_multiplier
    if top_db is not None:
        shape = x_db.size()
        packed_channels = shape[-3] if x_db.dim() > 2 else 1
        x_db = x_db.reshape(-1, packed_channels, shape[-2], shape[-1])
        x_db = torch.max(x_db, (x_db.amax(dim=(-3, -2, -1)) - top_db).view(-1, 1, 1, 1))
        x_db = x_db.reshape(shape)
    return x_db


class Spectrogram(torch.nn.Module):
    def __init__(self, n_fft=8, hop_length=4, power=2.0, normalized=False):
        super().__init__()
        self.n_fft = n_fft
        self.win_length = n_fft
        self.hop_length = hop_length
        self.pad = 0
        self.power = power
        self.normalized = normalized
        self.register_buffer("window", torch.hann_window(self.win_length))

    def forward(self, waveform):
        return spectrogram(waveform, self.pad, self.window, self.n_fft, self.hop_length, self.win_length, self.power, self.normalized)


class AmplitudeToDB(torch.nn.Module):
    def __init__(self, stype="power", top_db=None):
        super().__init__()
        self.stype = stype
        self.top_db = top_db
        self.multiplier = 10.0 if stype == "power" else 20.0
        self.amin = 1e-10
        self.ref_value = 1.0
        self.db_multiplier = math.log10(max(self.amin, self.ref_value))

    def forward(self, x):
        return amplitude_to_DB(x, self.multiplier, self.amin, self.db_multiplier, self.top_db)


frontend = torch.nn.Sequential(Spectrogram(normalized="window"), AmplitudeToDB(top_db=80.0))


@torch.compile
def featurize(waveform):
    return frontend(waveform)


def make():
    torch.manual_seed(0)
    return featurize._torchdynamo_orig_callable, [(torch.randn(2, 64),)]
