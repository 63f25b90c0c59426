"""torchaudio vad `_measure`: `float(torch.sum(...))` of the cepstrum, then Python math.log on it.

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/filtering.py:1414-1482
Kept: _measure verbatim (the spectrum size ValueError, windowed rfft, the
boot_count smoothing multiplier, in-place spectrum and noise-spectrum updates
with torch.where, the cepstrum buffer, float() of the summed power,
math.log / -inf, max(0, 21 + result)); called per measurement window as
vad's loop does.
Simplified: dft length 16, 2 windows, windows are hann.
"""
import math

import torch
from torch import Tensor


def _measure(measure_len_ws: int, samples: Tensor, spectrum: Tensor, noise_spectrum: Tensor, spectrum_window: Tensor,
             spectrum_start: int, spectrum_end: int, cepstrum_window: Tensor, cepstrum_start: int, cepstrum_end: int,
             noise_reduction_amount: float, measure_smooth_time_mult: float, noise_up_time_mult: Tensor,
             noise_down_time_mult: Tensor, boot_count: int) -> float:
    device = samples.device
    if spectrum.size(-1) != noise_spectrum.size(-1):
        raise ValueError(
            "Expected spectrum size to match noise spectrum size in final dimension."
            f"Found: spectrum size: {spectrum.size()}, noise_spectrum size: {noise_spectrum.size()}"
        )
    dft_len_ws = spectrum.size()[-1]
    dftBuf = torch.zeros(dft_len_ws, device=device)
    dftBuf[:measure_len_ws] = samples * spectrum_window[:measure_len_ws]
    _dftBuf = torch.fft.rfft(dftBuf)
    mult: float = boot_count / (1.0 + boot_count) if boot_count >= 0 else measure_smooth_time_mult
    _d = _dftBuf[spectrum_start:spectrum_end].abs()
    spectrum[spectrum_start:spectrum_end].mul_(mult).add_(_d * (1 - mult))
    _d = spectrum[spectrum_start:spectrum_end] ** 2
    _zeros = torch.zeros(spectrum_end - spectrum_start, device=device)
    _mult = _zeros if boot_count >= 0 else torch.where(_d > noise_spectrum[spectrum_start:spectrum_end], noise_up_time_mult, noise_down_time_mult)
    noise_spectrum[spectrum_start:spectrum_end].mul_(_mult).add_(_d * (1 - _mult))
    _d = torch.sqrt(torch.max(_zeros, _d - noise_reduction_amount * noise_spectrum[spectrum_start:spectrum_end]))
    _cepstrum_Buf: Tensor = torch.zeros(dft_len_ws >> 1, device=device)
    _cepstrum_Buf[spectrum_start:spectrum_end] = _d * cepstrum_window
    _cepstrum_Buf[spectrum_end : dft_len_ws >> 1].zero_()
    _cepstrum_Buf = torch.fft.rfft(_cepstrum_Buf)
    result: float = float(torch.sum(_cepstrum_Buf[cepstrum_start:cepstrum_end].abs().pow(2)))
    result = math.log(result / (cepstrum_end - cepstrum_start)) if result > 0 else -math.inf
    return max(0, 21 + result)


@torch.compile
def measure_windows(waveform, boot_count: int):
    spectrum = torch.zeros(16)
    noise_spectrum = torch.zeros(16)
    window = torch.hann_window(8)
    measures = []
    for start in range(0, waveform.shape[-1] - 8 + 1, 8):
        measures.append(_measure(8, waveform[start:start + 8], spectrum, noise_spectrum, window, 1, 6, torch.hann_window(5),
                                 1, 4, 1.35, 0.9, torch.tensor(0.1), torch.tensor(0.01), boot_count))
    return torch.tensor(measures)


def make():
    torch.manual_seed(0)
    return measure_windows._torchdynamo_orig_callable, [(torch.randn(16), 0), (torch.randn(16), -1)]
