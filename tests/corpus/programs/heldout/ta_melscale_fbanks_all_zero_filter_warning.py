"""torchaudio melscale_fbanks built per call: `if (fb.max(dim=0).values == 0.0).any(): warnings.warn(...)`.

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/functional.py:300-420 (_hz_to_mel, _mel_to_hz,
_create_triangular_filterbank, melscale_fbanks)
Kept: the norm ValueError, linspace of the STFT bins, _hz_to_mel on Python
floats (slaney branch with math.log), _mel_to_hz on a tensor with the
boolean-mask assignment `freqs[log_t] = ...`, the triangular filterbank,
slaney normalisation, the all-zero-filter warning with its f-string, and a
feature function that builds the filterbank from the spectrogram's size on
every call (as code that reconstructs its mel transform per call does).
Simplified: the spectrogram is an input; sizes are tiny.
"""
import math
import warnings
from typing import Optional

import torch
from torch import Tensor


def _hz_to_mel(freq: float, mel_scale: str = "htk") -> float:
    if mel_scale not in ["slaney", "htk"]:
        raise ValueError('mel_scale should be one of "htk" or "slaney".')

    if mel_scale == "htk":
        return 2595.0 * math.log10(1.0 + (freq / 700.0))

    f_min = 0.0
    f_sp = 200.0 / 3
    mels = (freq - f_min) / f_sp

    min_log_hz = 1000.0
    min_log_mel = (min_log_hz - f_min) / f_sp
    logstep = math.log(6.4) / 27.0

    if freq >= min_log_hz:
        mels = min_log_mel + math.log(freq / min_log_hz) / logstep

    return mels


def _mel_to_hz(mels: Tensor, mel_scale: str = "htk") -> Tensor:
    if mel_scale not in ["slaney", "htk"]:
        raise ValueError('mel_scale should be one of "htk" or "slaney".')

    if mel_scale == "htk":
        return 700.0 * (10.0 ** (mels / 2595.0) - 1.0)

    f_min = 0.0
    f_sp = 200.0 / 3
    freqs = f_min + f_sp * mels

    min_log_hz = 1000.0
    min_log_mel = (min_log_hz - f_min) / f_sp
    logstep = math.log(6.4) / 27.0

    log_t = mels >= min_log_mel
    freqs[log_t] = min_log_hz * torch.exp(logstep * (mels[log_t] - min_log_mel))

    return freqs


def _create_triangular_filterbank(all_freqs: Tensor, f_pts: Tensor) -> Tensor:
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)
    zero = torch.zeros(1)
    down_slopes = (-1.0 * slopes[:, :-2]) / f_diff[:-1]
    up_slopes = slopes[:, 2:] / f_diff[1:]
    fb = torch.max(zero, torch.min(down_slopes, up_slopes))
    return fb


def melscale_fbanks(
    n_freqs: int,
    f_min: float,
    f_max: float,
    n_mels: int,
    sample_rate: int,
    norm: Optional[str] = None,
    mel_scale: str = "htk",
) -> Tensor:
    if norm is not None and norm != "slaney":
        raise ValueError('norm must be one of None or "slaney"')

    all_freqs = torch.linspace(0, sample_rate // 2, n_freqs)

    m_min = _hz_to_mel(f_min, mel_scale=mel_scale)
    m_max = _hz_to_mel(f_max, mel_scale=mel_scale)

    m_pts = torch.linspace(m_min, m_max, n_mels + 2)
    f_pts = _mel_to_hz(m_pts, mel_scale=mel_scale)

    fb = _create_triangular_filterbank(all_freqs, f_pts)

    if norm is not None and norm == "slaney":
        enorm = 2.0 / (f_pts[2 : n_mels + 2] - f_pts[:n_mels])
        fb *= enorm.unsqueeze(0)

    if (fb.max(dim=0).values == 0.0).any():
        warnings.warn(
            "At least one mel filterbank has all zero values. "
            f"The value for `n_mels` ({n_mels}) may be set too high. "
            f"Or, the value for `n_freqs` ({n_freqs}) may be set too low."
        )

    return fb


@torch.compile(dynamic=False)
def log_mel_features(specgram: Tensor, sample_rate: int = 16000, n_mels: int = 8):
    fb = melscale_fbanks(specgram.size(-2), 0.0, float(sample_rate // 2), n_mels, sample_rate, "slaney", "slaney")
    mel_specgram = torch.matmul(specgram.transpose(-1, -2), fb).transpose(-1, -2)
    return torch.log(mel_specgram + 1e-6)


def make():
    torch.manual_seed(0)
    return log_mel_features._torchdynamo_orig_callable, [
        (torch.rand(1, 65, 4),),
        (torch.rand(1, 9, 4),),
    ]
