"""torchaudio _mel_to_hz (slaney): `freqs[log_t] = ... mels[log_t] ...` reads through a boolean mask.

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/functional.py:425-587
Kept: _hz_to_mel (Python math on floats), _mel_to_hz with the slaney linear
and log scale, melscale_fbanks' m_pts linspace, f_pts, the triangular filter
slopes and the all-zero-filter warning, used per call to build the filterbank.
Simplified: 16 freq bins, 6 mels, sample rate 8000; norm=None.
"""
import math
import warnings

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


def melscale_fbanks(n_freqs: int, f_min: float, f_max: float, n_mels: int, sample_rate: int, norm=None, mel_scale: str = "htk") -> Tensor:
    if norm is not None and norm != "slaney":
        raise ValueError('norm must be one of None or "slaney"')
    all_freqs = torch.linspace(0, sample_rate // 2, n_freqs)
    m_min = _hz_to_mel(f_min, mel_scale=mel_scale)
    m_max = _hz_to_mel(f_max, mel_scale=mel_scale)
    m_pts = torch.linspace(m_min, m_max, n_mels + 2)
    f_pts = _mel_to_hz(m_pts, mel_scale=mel_scale)
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)
    zero = torch.zeros(1)
    down_slopes = (-1.0 * slopes[:, :-2]) / f_diff[:-1]
    up_slopes = slopes[:, 2:] / f_diff[1:]
    fb = torch.max(zero, torch.min(down_slopes, up_slopes))
    if (fb.max(dim=0).values == 0.0).any():
        warnings.warn("At least one mel filterbank has all zero values.")
    return fb


@torch.compile
def log_mel(power_spec, f_max: float):
    fb = melscale_fbanks(power_spec.shape[-2], 0.0, f_max, 6, 8000, mel_scale="slaney")
    return torch.log(torch.matmul(power_spec.transpose(-1, -2), fb).transpose(-1, -2) + 1e-6)


def make():
    torch.manual_seed(0)
    return log_mel._torchdynamo_orig_callable, [(torch.rand(1, 16, 5), 4000.0)]
