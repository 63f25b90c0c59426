"""torchaudio overdrive: three boolean masks with masked writes, then the generic per-sample Python loop (the non-CPU-kernel path).

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/filtering.py:1135-1203
Kept: _dB2Linear, overdrive (view to 2-D, gain/colour, the mask1/mask2/mask3
writes `temp[mask3] = temp[mask3] - temp[mask3] ** 3 * (1.0 / 3)`, zeros
output) and _overdrive_core_loop_generic verbatim.
Simplified: the compiled C++ CPU loop is not available here, so the generic
loop is called as on non-CPU devices; 1x6 waveform.
"""
import math

import torch
from torch import Tensor


def _dB2Linear(x: float) -> float:
    return math.exp(x * math.log(10) / 20.0)


def _overdrive_core_loop_generic(waveform: Tensor, temp: Tensor, last_in: Tensor, last_out: Tensor, output_waveform: Tensor):
    for i in range(waveform.shape[-1]):
        last_out = temp[:, i] - last_in + 0.995 * last_out
        last_in = temp[:, i]
        output_waveform[:, i] = waveform[:, i] * 0.5 + last_out * 0.75


def overdrive(waveform: Tensor, gain: float = 20, colour: float = 20) -> Tensor:
    actual_shape = waveform.shape
    device, dtype = waveform.device, waveform.dtype
    waveform = waveform.view(-1, actual_shape[-1])
    gain = _dB2Linear(gain)
    colour = colour / 200
    last_in = torch.zeros(waveform.shape[:-1], dtype=dtype, device=device)
    last_out = torch.zeros(waveform.shape[:-1], dtype=dtype, device=device)
    temp = waveform * gain + colour
    mask1 = temp < -1
    temp[mask1] = torch.tensor(-2.0 / 3.0, dtype=dtype, device=device)
    mask2 = temp > 1
    temp[mask2] = torch.tensor(2.0 / 3.0, dtype=dtype, device=device)
    mask3 = ~mask1 & ~mask2
    temp[mask3] = temp[mask3] - temp[mask3] ** 3 * (1.0 / 3)
    output_waveform = torch.zeros_like(waveform, dtype=dtype, device=device)
    _overdrive_core_loop_generic(waveform, temp, last_in, last_out, output_waveform)
    return output_waveform.clamp(min=-1, max=1).view(actual_shape)


effect = torch.compile(overdrive)


def make():
    torch.manual_seed(0)
    return overdrive, [(torch.rand(1, 6) * 0.2 - 0.1,)]
