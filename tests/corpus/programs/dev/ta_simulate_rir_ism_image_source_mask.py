"""torchaudio `simulate_rir_ism`: image sources are selected with a boolean mask (`XYZ[XYZ.abs().sum(dim=-1) <= max_order]`), coefficients are validated with `torch.any(coeffs < 0)`, and the RIR length is `int(delay_i.max() + ...)`; multi-band walls add an FFT convolution with octave filters.

Source: pytorch/audio@2b68c1ed295ebe74c76c38522c11448bc354d0e4:src/torchaudio/prototype/functional/_rir.py:9-240
Kept: _compute_image_sources, _hann, _frac_delay, _adjust_coeff,
_validate_inputs and simulate_rir_ism verbatim (minus the @dropping_support
deprecation decorator); fftconvolve and its mode helpers from
torchaudio/functional/functional.py.
Simplified: the C++ ops are local stand-ins: torch.ops.torchaudio._simulate_rir
(adds each image source's short IR at its integer delay: scatter_add over
time) and torch.ops.torchaudio._make_rir_filter (windowed-sinc band-pass bank
around each centre frequency); max_order 2, delay filter length 9, a 6 x 4 x 3
room at 800 Hz.
"""
import math
from typing import Optional, Tuple, Union

import torch
from torch import Tensor


def _simulate_rir(irs: Tensor, delay_i: Tensor, rir_length: int) -> Tensor:
    # stand-in for torch.ops.torchaudio._simulate_rir: (band, image, channel, L) -> (band, channel, rir_length)
    num_band, num_image, num_channel, filter_len = irs.shape
    rir = irs.new_zeros(num_band, num_channel, rir_length)
    idx = delay_i.long().transpose(0, 1)[None, :, :, None] + torch.arange(filter_len, device=irs.device)
    idx = idx.expand(num_band, -1, -1, -1).reshape(num_band, num_channel, -1)
    src = irs.permute(0, 2, 1, 3).reshape(num_band, num_channel, -1)
    return rir.scatter_add_(2, idx, src)


def _make_rir_filter(centers: Tensor, sample_rate: float, n_fft: int = 512) -> Tensor:
    # stand-in for torch.ops.torchaudio._make_rir_filter: one band-pass FIR per octave band
    n = torch.arange(-(n_fft // 2), n_fft // 2 + 1, dtype=centers.dtype, device=centers.device)
    window = torch.hann_window(n.numel(), periodic=False, dtype=centers.dtype, device=centers.device)
    lo = (centers / math.sqrt(2)) / sample_rate
    hi = torch.clamp(centers * math.sqrt(2) / sample_rate, max=0.5)
    filters = 2 * hi[:, None] * torch.special.sinc(2 * hi[:, None] * n) - 2 * lo[:, None] * torch.special.sinc(2 * lo[:, None] * n)
    return filters * window


def _check_convolve_mode(mode: str) -> None:
    valid_convolve_modes = ["full", "valid", "same"]
    if mode not in valid_convolve_modes:
        raise ValueError(f"Unrecognized mode value '{mode}'. Please specify one of {valid_convolve_modes}.")


def _apply_convolve_mode(conv_result: torch.Tensor, x_length: int, y_length: int, mode: str) -> torch.Tensor:
    valid_convolve_modes = ["full", "valid", "same"]
    if mode == "full":
        return conv_result
    elif mode == "valid":
        target_length = max(x_length, y_length) - min(x_length, y_length) + 1
        start_idx = (conv_result.size(-1) - target_length) // 2
        return conv_result[..., start_idx : start_idx + target_length]
    elif mode == "same":
        start_idx = (conv_result.size(-1) - x_length) // 2
        return conv_result[..., start_idx : start_idx + x_length]
    else:
        raise ValueError(f"Unrecognized mode value '{mode}'. Please specify one of {valid_convolve_modes}.")


def fftconvolve(x: torch.Tensor, y: torch.Tensor, mode: str = "full") -> torch.Tensor:
    _check_convolve_mode(mode)

    n = x.size(-1) + y.size(-1) - 1
    fresult = torch.fft.rfft(x, n=n) * torch.fft.rfft(y, n=n)
    result = torch.fft.irfft(fresult, n=n)
    return _apply_convolve_mode(result, x.size(-1), y.size(-1), mode)


def _compute_image_sources(
    room: torch.Tensor,
    source: torch.Tensor,
    max_order: int,
    absorption: torch.Tensor,
    scatter: Optional[torch.Tensor] = None,
) -> Tuple[Tensor, Tensor]:
    if scatter is None:
        tr = torch.sqrt(1 - absorption)
    else:
        tr = torch.sqrt(1 - absorption) * torch.sqrt(1 - scatter)

    ind = torch.arange(-max_order, max_order + 1, device=source.device)
    if room.shape[0] == 2:
        XYZ = torch.meshgrid(ind, ind, indexing="ij")
    else:
        XYZ = torch.meshgrid(ind, ind, ind, indexing="ij")
    XYZ = torch.stack([c.reshape((-1,)) for c in XYZ], dim=-1)
    XYZ = XYZ[XYZ.abs().sum(dim=-1) <= max_order]

    # compute locations of image sources
    d = room[None, :]
    s = source[None, :]
    img_loc = torch.where(XYZ % 2 == 1, d * (XYZ + 1) - s, d * XYZ + s)

    # attenuation
    exp_lo = abs(torch.floor((XYZ / 2)))
    exp_hi = abs(torch.floor((XYZ + 1) / 2))
    t_lo = tr[:, ::2].unsqueeze(1).repeat(1, XYZ.shape[0], 1)  # (num_band, left walls)
    t_hi = tr[:, 1::2].unsqueeze(1).repeat(1, XYZ.shape[0], 1)  # (num_band, right walls)
    att = torch.prod((t_lo**exp_lo) * (t_hi**exp_hi), dim=-1)  # (num_band, num_image_source)
    return img_loc, att


def _hann(x: torch.Tensor, T: int):
    y = torch.where(
        torch.abs(x) <= T / 2,
        0.5 * (1 + torch.cos(2 * math.pi * x / T)),
        x.new_zeros(1),
    )
    return y


def _frac_delay(delay: torch.Tensor, delay_i: torch.Tensor, delay_filter_length: int):
    if delay_filter_length % 2 != 1:
        raise ValueError("The filter length must be odd")

    pad = delay_filter_length // 2
    n = torch.arange(-pad, pad + 1, device=delay.device) + delay_i[..., None]
    delay = delay[..., None]

    return torch.special.sinc(n - delay) * _hann(n - delay, 2 * pad)


def _adjust_coeff(coeffs: Union[float, torch.Tensor], name: str) -> torch.Tensor:
    num_walls = 6
    if isinstance(coeffs, float):
        if coeffs < 0:
            raise ValueError(f"`{name}` must be non-negative. Found: {coeffs}")
        return torch.full((1, num_walls), coeffs)
    if isinstance(coeffs, Tensor):
        if torch.any(coeffs < 0):
            raise ValueError(f"`{name}` must be non-negative. Found: {coeffs}")
        if coeffs.ndim == 1:
            if coeffs.numel() != num_walls:
                raise ValueError(
                    f"The shape of `{name}` must be ({num_walls},) when it is a 1D Tensor. "
                    f"Found the shape {coeffs.shape}."
                )
            return coeffs.unsqueeze(0)
        if coeffs.ndim == 2:
            if coeffs.shape[1] != num_walls:
                raise ValueError(
                    f"The shape of `{name}` must be (NUM_BANDS, {num_walls}) when it "
                    f"is a 2D Tensor. Found: {coeffs.shape}."
                )
            return coeffs
    raise TypeError(f"`{name}` must be float or Tensor.")


def _validate_inputs(
    room: torch.Tensor,
    source: torch.Tensor,
    mic_array: torch.Tensor,
):
    if not (room.ndim == 1 and room.numel() == 3):
        raise ValueError(f"`room` must be a 1D Tensor with 3 elements. Found {room.shape}.")
    if not (source.ndim == 1 and source.numel() == 3):
        raise ValueError(f"`source` must be 1D Tensor with 3 elements. Found {source.shape}.")
    if not (mic_array.ndim == 2 and mic_array.shape[1] == 3):
        raise ValueError(f"`mic_array` must be a 2D Tensor with shape (num_channels, 3). Found {mic_array.shape}.")


def simulate_rir_ism(
    room: torch.Tensor,
    source: torch.Tensor,
    mic_array: torch.Tensor,
    max_order: int,
    absorption: Union[float, torch.Tensor],
    output_length: Optional[int] = None,
    delay_filter_length: int = 81,
    center_frequency: Optional[torch.Tensor] = None,
    sound_speed: float = 343.0,
    sample_rate: float = 16000.0,
) -> Tensor:
    _validate_inputs(room, source, mic_array)
    absorption = _adjust_coeff(absorption, "absorption")
    img_location, att = _compute_image_sources(room, source, max_order, absorption)

    # compute distances between image sources and microphones
    vec = img_location[:, None, :] - mic_array[None, :, :]
    dist = torch.linalg.norm(vec, dim=-1)  # (image_source, channel)

    img_src_att = att[..., None] / dist[None, ...]  # (band, image_source, channel)

    # separate delays in integer / frac part
    delay = dist * sample_rate / sound_speed  # distance to delay in samples
    delay_i = torch.ceil(delay)  # integer part

    # compute the shorts IRs corresponding to each image source
    irs = img_src_att[..., None] * _frac_delay(delay, delay_i, delay_filter_length)[None, ...]

    rir_length = int(delay_i.max() + irs.shape[-1])
    rir = _simulate_rir(irs, delay_i.type(torch.int32), rir_length)

    # multi-band processing
    if absorption.shape[0] > 1:
        if center_frequency is None:
            center = torch.tensor(
                [125.0, 250.0, 500.0, 1000.0, 2000.0, 4000.0, 8000.0], dtype=room.dtype, device=room.device
            )
        else:
            center = center_frequency
        # n_fft is set to 512 by default.
        filters = _make_rir_filter(center, sample_rate, n_fft=512)
        rir = fftconvolve(rir, filters.unsqueeze(1).repeat(1, rir.shape[1], 1), mode="same")

    # sum up rir signals of all image sources into one waveform.
    rir = rir.sum(0)

    if output_length is not None:
        if output_length > rir.shape[-1]:
            rir = torch.nn.functional.pad(rir, (0, output_length - rir.shape[-1]), "constant", 0.0)
        else:
            rir = rir[..., :output_length]

    return rir


compiled_rir = torch.compile(simulate_rir_ism, backend="inductor")

RAISING_INPUTS = {4: "ValueError"}


def make():
    torch.manual_seed(0)
    room = torch.tensor([6.0, 4.0, 3.0])
    source = torch.tensor([1.0, 1.5, 1.2])
    mics = torch.tensor([[3.0, 2.0, 1.0], [3.5, 2.0, 1.0]])
    wall = torch.tensor([0.1, 0.2, 0.1, 0.3, 0.5, 0.4])
    bands = torch.rand(7, 6) * 0.5
    return simulate_rir_ism, [
        (room, source, mics, 2, 0.2, None, 9, None, 343.0, 800.0),
        (room, source, mics, 2, wall, 64, 9, None, 343.0, 800.0),
        (room, source, mics, 2, wall, 8, 9, None, 343.0, 800.0),
        (room, source, mics, 1, bands, None, 9, torch.tensor([50.0, 70.0, 100.0, 140.0, 200.0, 280.0, 380.0]), 343.0, 800.0),
        (room, source, mics, 2, -wall, None, 9, None, 343.0, 800.0),
    ]
