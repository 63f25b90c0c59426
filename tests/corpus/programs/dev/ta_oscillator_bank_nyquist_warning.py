"""torchaudio prototype oscillator_bank behind the `dropping_support` deprecation wrapper: `if torch.any(invalid): warnings.warn(...)` above Nyquist, float64 cumsum phases, harmonic series from extend_pitch.

Source: pytorch/audio@1f643d1de912cfef21b1daefc8774ddcace7a0b2:src/torchaudio/prototype/functional/_dsp.py:10-158
Kept: oscillator_bank exactly (shape check, reduction validation, the
tensor-valued `torch.any(invalid)` guard with warnings.warn and
torch.where, phase cumsum in float64 and cast back, sum/mean/none
reductions), extend_pitch with its isinstance(pattern, ...) dispatch, and
the `@dropping_support` decorator from
src/torchaudio/_internal/module_utils.py (deprecated -> wrap_deprecated,
which warns on every call).
Simplified: the caller is a small harmonic synthesizer (as in the additive
synthesis tutorial): f0 -> extend_pitch -> per-harmonic amplitude decay ->
oscillator_bank; sample rate 8000, 64 frames, 4 harmonics.
"""
import warnings
from functools import wraps
from typing import List, Optional, Union

import torch


UNSUPPORTED = []


def wrap_deprecated(func, name, direction: str, version: Optional[str] = None, remove: bool = False):
    @wraps(func)
    def wrapped(*args, **kwargs):
        message = f"{name} has been deprecated. {direction}"
        if remove:
            message += f' It will be removed from {"a future" if version is None else "the " + str(version)} release. '
        warnings.warn(message, stacklevel=2)
        return func(*args, **kwargs)
    return wrapped


def deprecated(direction: str, version: Optional[str] = None, remove: bool = False):
    def decorator(func):
        wrapped = wrap_deprecated(func, f"{func.__module__}.{func.__name__}", direction, version=version, remove=remove)
        UNSUPPORTED.append(wrapped)
        return wrapped

    return decorator


DEPRECATION_MSG = (
    "As TorchAudio is no longer being actively developed, this functionality can no longer be supported. "
    "See https://github.com/pytorch/audio/issues/3902 for more details.")

dropping_support = deprecated(DEPRECATION_MSG, version="2.9", remove=True)


@dropping_support
def oscillator_bank(
    frequencies: torch.Tensor,
    amplitudes: torch.Tensor,
    sample_rate: float,
    reduction: str = "sum",
    dtype: Optional[torch.dtype] = torch.float64,
) -> torch.Tensor:
    if frequencies.shape != amplitudes.shape:
        raise ValueError(
            "The shapes of `frequencies` and `amplitudes` must match. "
            f"Found: {frequencies.shape} and {amplitudes.shape} respectively."
        )
    reductions = ["sum", "mean", "none"]
    if reduction not in reductions:
        raise ValueError(f"The value of reduction must be either {reductions}. Found: {reduction}")

    invalid = torch.abs(frequencies) >= sample_rate / 2
    if torch.any(invalid):
        warnings.warn(
            "Some frequencies are above nyquist frequency. "
            "Setting the corresponding amplitude to zero. "
            "This might cause numerically unstable gradient."
        )
        amplitudes = torch.where(invalid, 0.0, amplitudes)

    pi2 = 2.0 * torch.pi
    freqs = frequencies * pi2 / sample_rate % pi2
    phases = torch.cumsum(freqs, dim=-2, dtype=dtype)
    if dtype is not None and freqs.dtype != dtype:
        phases = phases.to(freqs.dtype)

    waveform = amplitudes * torch.sin(phases)
    if reduction == "sum":
        return waveform.sum(-1)
    if reduction == "mean":
        return waveform.mean(-1)
    return waveform


@dropping_support
def extend_pitch(
    base: torch.Tensor,
    pattern: Union[int, List[float], torch.Tensor],
):
    if isinstance(pattern, torch.Tensor):
        mult = pattern
    elif isinstance(pattern, int):
        mult = torch.linspace(1.0, float(pattern), pattern, device=base.device, dtype=base.dtype)
    else:
        mult = torch.tensor(pattern, dtype=base.dtype, device=base.device)
    h_freq = base @ mult.unsqueeze(0)
    return h_freq


class HarmonicSynth(torch.nn.Module):
    def __init__(self, sample_rate=8000, num_harmonics=4):
        super().__init__()
        self.sample_rate = sample_rate
        self.num_harmonics = num_harmonics

    def forward(self, f0, amplitude):
        # f0, amplitude: (time, 1)
        freq = extend_pitch(f0, self.num_harmonics)
        mults = torch.arange(1, self.num_harmonics + 1, dtype=f0.dtype)
        amp = amplitude * (1.0 / mults)
        return oscillator_bank(freq, amp, sample_rate=self.sample_rate)


synth = torch.compile(HarmonicSynth())


def make():
    torch.manual_seed(0)
    n = 64
    f0_low = torch.linspace(200.0, 400.0, n).unsqueeze(-1)
    f0_high = torch.linspace(900.0, 1500.0, n).unsqueeze(-1)  # upper harmonics cross 4 kHz
    amp = torch.rand(n, 1)
    return HarmonicSynth(), [(f0_low, amp), (f0_high, amp)]
