"""torchaudio dcshift with a limiter: boolean-mask reads `waveform[mask]` and masked writes, chosen by the Python sign of `shift`.

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/filtering.py:370-414
Kept: dcshift verbatim (the limiter threshold from Python floats, the
positive / negative shift branches with `waveform[mask]` arithmetic and
`output_waveform[mask] = ...` / `[~mask]` writes, the no-limiter clamp).
Simplified: applied to a 2x8 waveform with shift +0.3 and -0.3.
"""
from typing import Optional

import torch
from torch import Tensor


def dcshift(waveform: Tensor, shift: float, limiter_gain: Optional[float] = None) -> Tensor:
    output_waveform = waveform
    limiter_threshold = 0.0
    if limiter_gain is not None:
        limiter_threshold = 1.0 - (abs(shift) - limiter_gain)
    if limiter_gain is not None and shift > 0:
        mask = waveform > limiter_threshold
        temp = (waveform[mask] - limiter_threshold) * limiter_gain / (1 - limiter_threshold)
        output_waveform[mask] = (temp + limiter_threshold + shift).clamp(max=limiter_threshold)
        output_waveform[~mask] = (waveform[~mask] + shift).clamp(min=-1, max=1)
    elif limiter_gain is not None and shift < 0:
        mask = waveform < -limiter_threshold
        temp = (waveform[mask] + limiter_threshold) * limiter_gain / (1 - limiter_threshold)
        output_waveform[mask] = (temp - limiter_threshold + shift).clamp(min=-limiter_threshold)
        output_waveform[~mask] = (waveform[~mask] + shift).clamp(min=-1, max=1)
    else:
        output_waveform = (waveform + shift).clamp(min=-1, max=1)
    return output_waveform


@torch.compile
def apply_dcshift(waveform, shift: float):
    return dcshift(waveform.clone(), shift, limiter_gain=0.05)


def make():
    torch.manual_seed(0)
    wav = torch.rand(2, 8) * 2 - 1
    return apply_dcshift._torchdynamo_orig_callable, [(wav, 0.3), (wav, -0.3)]
