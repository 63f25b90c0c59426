"""torchaudio detect_pitch_frequency: NCCF over Python-int lags, max per frame, combine by mask, median smoothing (no break expected).

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/functional.py:1015-1161
Kept: _compute_nccf (math.ceil sizes, padding, the lag loop with unfold and
vector_norm), _combine_max, _find_max_per_frame (in-place index shifts),
_median_smoothing (pad, cat of a repeated column, unfold, median) and
detect_pitch_frequency verbatim.
Simplified: sample rate 400, freq_low 20, freq_high 190, win_length 3; 80 samples.
"""
import math
from typing import Tuple

import torch
from torch import Tensor


def _compute_nccf(waveform: Tensor, sample_rate: int, frame_time: float, freq_low: int) -> Tensor:
    EPSILON = 10 ** (-9)
    lags = int(math.ceil(sample_rate / freq_low))
    frame_size = int(math.ceil(sample_rate * frame_time))
    waveform_length = waveform.size()[-1]
    num_of_frames = int(math.ceil(waveform_length / frame_size))
    p = lags + num_of_frames * frame_size - waveform_length
    waveform = torch.nn.functional.pad(waveform, (0, p))
    output_lag = []
    for lag in range(1, lags + 1):
        s1 = waveform[..., :-lag].unfold(-1, frame_size, frame_size)[..., :num_of_frames, :]
        s2 = waveform[..., lag:].unfold(-1, frame_size, frame_size)[..., :num_of_frames, :]
        output_frames = (s1 * s2).sum(-1) / (EPSILON + torch.linalg.vector_norm(s1, ord=2, dim=-1)).pow(2) / (EPSILON + torch.linalg.vector_norm(s2, ord=2, dim=-1)).pow(2)
        output_lag.append(output_frames.unsqueeze(-1))
    nccf = torch.cat(output_lag, -1)
    return nccf


def _combine_max(a: Tuple[Tensor, Tensor], b: Tuple[Tensor, Tensor], thresh: float=0.99) -> Tuple[Tensor, Tensor]:
    mask = a[0] > thresh * b[0]
    values = mask * a[0] + ~mask * b[0]
    indices = mask * a[1] + ~mask * b[1]
    return (values, indices)


def _find_max_per_frame(nccf: Tensor, sample_rate: int, freq_high: int) -> Tensor:
    lag_min = int(math.ceil(sample_rate / freq_high))
    best = torch.max(nccf[..., lag_min:], -1)
    half_size = nccf.shape[-1] // 2
    half = torch.max(nccf[..., lag_min:half_size], -1)
    best = _combine_max(half, best)
    indices = best[1]
    indices += lag_min
    indices += 1
    return indices


def _median_smoothing(indices: Tensor, win_length: int) -> Tensor:
    pad_length = (win_length - 1) // 2
    indices = torch.nn.functional.pad(indices, (pad_length, 0), mode='constant', value=0.0)
    indices[..., :pad_length] = torch.cat(pad_length * [indices[..., pad_length].unsqueeze(-1)], dim=-1)
    roll = indices.unfold(-1, win_length, 1)
    values, _ = torch.median(roll, -1)
    return values


def detect_pitch_frequency(waveform: Tensor, sample_rate: int, frame_time: float=10 ** (-2), win_length: int=30, freq_low: int=85, freq_high: int=3400) -> Tensor:
    shape = list(waveform.size())
    waveform = waveform.reshape([-1] + shape[-1:])
    nccf = _compute_nccf(waveform, sample_rate, frame_time, freq_low)
    indices = _find_max_per_frame(nccf, sample_rate, freq_high)
    indices = _median_smoothing(indices, win_length)
    EPSILON = 10 ** (-9)
    freq = sample_rate / (EPSILON + indices.to(torch.float))
    freq = freq.reshape(shape[:-1] + list(freq.shape[-1:]))
    return freq



pitch = torch.compile(detect_pitch_frequency)


def make():
    torch.manual_seed(0)
    t = torch.arange(80) / 400.0
    wave = torch.sin(2 * math.pi * 50.0 * t)[None]
    return detect_pitch_frequency, [(wave, 400, 0.02, 3, 20, 190)]
