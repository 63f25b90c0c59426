"""torchcde's linear_interpolation_coeffs: `validate_input_path` walks `for t_i in t: if t_i <= prev_t_i`, `if torch.isnan(x).any()` routes to the missing-value filler, which uses `masked_select`, `if path_no_nan.size(0) == 0`, `if torch.isnan(x[0])` and a Python loop over a tensor of NaN indices.

Source: patrick-kidger/torchcde@a7b8403a215d7433eb14abe647b39dc098b9933d:torchcde/interpolation_linear.py:13-81,119-160
Also: torchcde/misc.py@010052950a26e0886ee6fe32f700d85d151e4980:28-32,89-119 (cheap_stack, validate_input_path).
Kept: _linear_interpolation_coeffs_with_missing_values(_scalar),
linear_interpolation_coeffs (without the rectilinear option),
validate_input_path and cheap_stack verbatim.
Simplified: a neural-CDE front end that embeds the coefficients with a Linear
layer calls it; rectilinear interpolation is dropped.
"""
import math

import torch
from torch import nn


def cheap_stack(tensors, dim):
    if len(tensors) == 1:
        return tensors[0].unsqueeze(dim)
    else:
        return torch.stack(tensors, dim=dim)


def validate_input_path(x, t):
    if not x.is_floating_point():
        raise ValueError("X must both be floating point.")

    if x.ndimension() < 2:
        raise ValueError("X must have at least two dimensions, corresponding to time and channels. It instead has "
                         "shape {}.".format(tuple(x.shape)))

    if t is None:
        t = torch.linspace(0, x.size(-2) - 1, x.size(-2), dtype=x.dtype, device=x.device)

    if not t.is_floating_point():
        raise ValueError("t must both be floating point.")
    if len(t.shape) != 1:
        raise ValueError("t must be one dimensional. It instead has shape {}.".format(tuple(t.shape)))
    prev_t_i = -math.inf
    for t_i in t:
        if t_i <= prev_t_i:
            raise ValueError("t must be monotonically increasing.")
        prev_t_i = t_i

    if x.size(-2) != t.size(0):
        raise ValueError("The time dimension of X must equal the length of t. X has shape {} and t has shape {}, "
                         "corresponding to time dimensions of {} and {} respectively."
                         .format(tuple(x.shape), tuple(t.shape), x.size(-2), t.size(0)))

    if t.size(0) < 2:
        raise ValueError("Must have a time dimension of size at least 2. It instead has shape {}, corresponding to a "
                         "time dimension of size {}.".format(tuple(t.shape), t.size(0)))

    return t


def _linear_interpolation_coeffs_with_missing_values_scalar(t, x):
    # t and X both have shape (length,)

    not_nan = ~torch.isnan(x)
    path_no_nan = x.masked_select(not_nan)

    if path_no_nan.size(0) == 0:
        # Every entry is a NaN, so we take a constant path with derivative zero, so return zero coefficients.
        return torch.zeros(x.size(0), dtype=x.dtype, device=x.device)

    if path_no_nan.size(0) == x.size(0):
        # Every entry is not-NaN, so just return.
        return x

    x = x.clone()
    if torch.isnan(x[0]):
        x[0] = path_no_nan[0]
    if torch.isnan(x[-1]):
        x[-1] = path_no_nan[-1]

    nan_indices = torch.arange(x.size(0), device=x.device).masked_select(torch.isnan(x))

    if nan_indices.size(0) == 0:
        # We only had missing values at the start or end
        return x

    prev_nan_index = nan_indices[0]
    prev_not_nan_index = prev_nan_index - 1
    prev_not_nan_indices = [prev_not_nan_index]
    for nan_index in nan_indices[1:]:
        if prev_nan_index != nan_index - 1:
            prev_not_nan_index = nan_index - 1
        prev_nan_index = nan_index
        prev_not_nan_indices.append(prev_not_nan_index)

    next_nan_index = nan_indices[-1]
    next_not_nan_index = next_nan_index + 1
    next_not_nan_indices = [next_not_nan_index]
    for nan_index in reversed(nan_indices[:-1]):
        if next_nan_index != nan_index + 1:
            next_not_nan_index = nan_index + 1
        next_nan_index = nan_index
        next_not_nan_indices.append(next_not_nan_index)
    next_not_nan_indices = reversed(next_not_nan_indices)
    for prev_not_nan_index, nan_index, next_not_nan_index in zip(prev_not_nan_indices,
                                                                 nan_indices,
                                                                 next_not_nan_indices):
        prev_stream = x[prev_not_nan_index]
        next_stream = x[next_not_nan_index]
        prev_time = t[prev_not_nan_index]
        next_time = t[next_not_nan_index]
        time = t[nan_index]
        ratio = (time - prev_time) / (next_time - prev_time)
        x[nan_index] = prev_stream + ratio * (next_stream - prev_stream)

    return x


def _linear_interpolation_coeffs_with_missing_values(t, x):
    if x.ndimension() == 1:
        return _linear_interpolation_coeffs_with_missing_values_scalar(t, x)
    else:
        out_pieces = []
        for p in x.unbind(dim=0):  # TODO: parallelise over this
            out = _linear_interpolation_coeffs_with_missing_values(t, p)
            out_pieces.append(out)
        return cheap_stack(out_pieces, dim=0)


def linear_interpolation_coeffs(x, t=None):
    t = validate_input_path(x, t)

    if torch.isnan(x).any():
        x = _linear_interpolation_coeffs_with_missing_values(t, x.transpose(-1, -2)).transpose(-1, -2)
    return x


class CDEFrontEnd(nn.Module):
    def __init__(self, channels=2, hidden=4):
        super().__init__()
        self.initial = nn.Linear(channels, hidden)

    def forward(self, x, t=None):
        coeffs = linear_interpolation_coeffs(x, t)
        return self.initial(coeffs)


front_end = torch.compile(CDEFrontEnd(), dynamic=False)


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 2)
    gappy = x.clone()
    gappy[0, 0, 0] = float("nan")
    gappy[0, 2, 1] = float("nan")
    gappy[0, 3, 1] = float("nan")
    gappy[1, 4, 0] = float("nan")
    gappy[1, :, 1] = float("nan")
    t = torch.tensor([0.0, 0.5, 1.0, 2.0, 3.0])
    return CDEFrontEnd(), [(x,), (gappy, t), (x, t.flip(0))]


RAISING_INPUTS = {2: "ValueError"}
