"""mbrl-lib powerlaw_psd_gaussian: colored noise for iCEM; the low-frequency cutoff index is a tensor (`ix = torch.sum(s_scale < fmin)`) tested with `if ix and ix < len(s_scale)`.

Source: facebookresearch/mbrl-lib@08281cc3dd66b69d547d52cd6db1675002412e49:mbrl/util/math.py:285-367
Also: mbrl/util/math.py:278-282 (rfftfreq).
Kept: the size list handling, the cutoff index and slice assignment, the
sigma computation, Normal(...).sample for power and phase, the even-length
`if not (samples % 2)` fix and torch.fft.irfft.
Simplified: rfftfreq's torch-version check (packaging.version) dropped and
the torch>=1.8 path kept.
"""
from typing import Iterable, Union

import torch
import torch.distributions
import torch.fft


def rfftfreq(samples: int, device: torch.device) -> torch.Tensor:
    return torch.fft.rfftfreq(samples, device=device)


def powerlaw_psd_gaussian(
    exponent: float,
    size: Union[int, Iterable[int]],
    device: torch.device,
    fmin: float = 0,
):
    """Gaussian (1/f)**beta noise, normalised to unit variance."""

    # Make sure size is a list so we can iterate it and assign to it.
    if isinstance(size, int):
        size = [size]
    else:
        size = list(size)

    # The number of samples in each time series
    samples = size[-1]

    # Calculate Frequencies (we assume a sample rate of one)
    # Use fft functions for real output (-> hermitian spectrum)
    f = rfftfreq(samples, device=device)

    # Build scaling factors for all frequencies
    s_scale = f
    fmin = max(fmin, 1.0 / samples)  # Low frequency cutoff
    ix = torch.sum(s_scale < fmin)  # Index of the cutoff
    if ix and ix < len(s_scale):
        s_scale[:ix] = s_scale[ix]
    s_scale = s_scale ** (-exponent / 2.0)

    # Calculate theoretical output standard deviation from scaling
    w = s_scale[1:].detach().clone()
    w[-1] *= (1 + (samples % 2)) / 2.0  # correct f = +-0.5
    sigma = 2 * torch.sqrt(torch.sum(w ** 2)) / samples

    # Adjust size to generate one Fourier component per frequency
    size[-1] = len(f)

    # Add empty dimension(s) to broadcast s_scale along last
    # dimension of generated random power + phase (below)
    dims_to_add = len(size) - 1
    s_scale = s_scale[(None,) * dims_to_add + (Ellipsis,)]

    # Generate scaled random power + phase
    m = torch.distributions.Normal(loc=0.0, scale=s_scale.flatten())
    sr = m.sample(tuple(size[:-1]))
    si = m.sample(tuple(size[:-1]))

    # If the signal length is even, frequencies +/- 0.5 are equal
    # so the coefficient must be real.
    if not (samples % 2):
        si[..., -1] = 0

    # Regardless of signal length, the DC component must be real
    si[..., 0] = 0

    # Combine power + corrected phase to Fourier components
    s = sr + 1j * si

    # Transform to real time series & scale to unit variance
    y = torch.fft.irfft(s, n=samples, axis=-1) / sigma

    return y


sample_colored_noise = torch.compile(powerlaw_psd_gaussian)


def make():
    torch.manual_seed(0)
    cpu = torch.device("cpu")
    return powerlaw_psd_gaussian, [
        (2.0, (6, 2, 8), cpu),
        (1.0, (6, 2, 7), cpu, 0.3),
    ]
