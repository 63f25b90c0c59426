"""torchaudio prototype frequency_impulse_response: `if magnitudes.min() < 0.0: warnings.warn(...)` on a tensor, then irfft + fftshift + Hann window, behind the `dropping_support` wrapper.

Source: pytorch/audio@1f643d1de912cfef21b1daefc8774ddcace7a0b2:src/torchaudio/prototype/functional/_dsp.py:227-245
Kept: frequency_impulse_response exactly (the tensor comparison guard
with warnings.warn, torch.fft.irfft, fftshift on the last dim,
hann_window(periodic=False) expanded to the IR), with the `@dropping_support`
decorator from src/torchaudio/_internal/module_utils.py (deprecated ->
wrap_deprecated, warns on every call).
Simplified: the caller is the filter-design half of a DDSP noise
generator (a linear layer predicts per-frame magnitudes from features,
then the IRs are built); 3 frames, 9 FFT bins. The magnitudes are not
passed through a positive nonlinearity, so they can go negative.
"""
import warnings
from functools import wraps
from typing import Optional

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
def frequency_impulse_response(magnitudes):
    if magnitudes.min() < 0.0:
        # Negative magnitude does not make sense but allowing so that autograd works
        # around 0.
        # Should we raise error?
        warnings.warn("The input frequency response should not contain negative values.")
    ir = torch.fft.fftshift(torch.fft.irfft(magnitudes), dim=-1)
    device, dtype = magnitudes.device, magnitudes.dtype
    window = torch.hann_window(ir.size(-1), periodic=False, device=device, dtype=dtype).expand_as(ir)
    return ir * window


class NoiseFilterDesign(torch.nn.Module):
    def __init__(self, in_features=4, num_bins=9):
        super().__init__()
        self.proj = torch.nn.Linear(in_features, num_bins)

    def forward(self, features):
        magnitudes = self.proj(features)
        return frequency_impulse_response(magnitudes)


@torch.compile
def design_filters(model, features):
    return model(features)


def make():
    torch.manual_seed(0)
    model = NoiseFilterDesign()
    with torch.no_grad():
        model.proj.bias.fill_(5.0)
    feats = torch.rand(3, 4)
    return design_filters._torchdynamo_orig_callable, [(model, feats), (model, feats - 20.0)]
