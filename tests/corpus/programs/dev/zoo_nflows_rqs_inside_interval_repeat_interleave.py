"""nflows' unconstrained rational-quadratic spline: `if torch.any(inside_interval_mask)`, boolean-mask reads of the spline parameters, a `torch.min(inputs) < left or torch.max(inputs) > right` domain check, and `torch.repeat_interleave` with tensor repeats to scatter results back.

Source: bayesiains/nflows@04989c4a65c70c6cda29cf8c645140f98f383b59:nflows/transforms/splines/rational_quadratic.py:13-187
Kept: unconstrained_rational_quadratic_spline verbatim (linear tails, the
repeat_values / trail reconstruction), rational_quadratic_spline's forward
branch with its domain and bin-size checks, torchutils.searchsorted.
Simplified: the inverse branch is dropped; a small coupling module produces
the unnormalized widths/heights/derivatives from a Linear layer.
"""
import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

DEFAULT_MIN_BIN_WIDTH = 1e-3
DEFAULT_MIN_BIN_HEIGHT = 1e-3
DEFAULT_MIN_DERIVATIVE = 1e-3


class InputOutsideDomain(Exception):
    """Exception to be thrown when the input to a transform is not within its domain."""


def searchsorted(bin_locations, inputs, eps=1e-6):
    bin_locations[..., -1] += eps
    return torch.sum(inputs[..., None] >= bin_locations, dim=-1) - 1


def unconstrained_rational_quadratic_spline(
    inputs,
    unnormalized_widths,
    unnormalized_heights,
    unnormalized_derivatives,
    inverse=False,
    tails="linear",
    tail_bound=1.0,
    min_bin_width=DEFAULT_MIN_BIN_WIDTH,
    min_bin_height=DEFAULT_MIN_BIN_HEIGHT,
    min_derivative=DEFAULT_MIN_DERIVATIVE,
):
    inside_interval_mask = (inputs >= -tail_bound) & (inputs <= tail_bound)
    outside_interval_mask = ~inside_interval_mask

    outputs = torch.zeros_like(inputs)
    logabsdet = torch.zeros_like(inputs)

    if tails == "linear":
        unnormalized_derivatives = F.pad(unnormalized_derivatives, pad=(1, 1))
        constant = np.log(np.exp(1 - min_derivative) - 1)
        unnormalized_derivatives[..., 0] = constant
        unnormalized_derivatives[..., -1] = constant

        outputs = torch.where(outside_interval_mask, inputs, outputs)
        logabsdet = torch.where(outside_interval_mask, torch.zeros_like(logabsdet), logabsdet)
    else:
        raise RuntimeError("{} tails are not implemented.".format(tails))

    if torch.any(inside_interval_mask):
        (
            a,
            b,
        ) = rational_quadratic_spline(
            inputs=inputs[inside_interval_mask],
            unnormalized_widths=unnormalized_widths[inside_interval_mask, :],
            unnormalized_heights=unnormalized_heights[inside_interval_mask, :],
            unnormalized_derivatives=unnormalized_derivatives[inside_interval_mask, :],
            inverse=inverse,
            left=-tail_bound,
            right=tail_bound,
            bottom=-tail_bound,
            top=tail_bound,
            min_bin_width=min_bin_width,
            min_bin_height=min_bin_height,
            min_derivative=min_derivative,
        )

        # turn inside_interval_mask into an int tensor
        in_mask = inside_interval_mask.reshape(-1).type(torch.int64)
        repeat_values = in_mask * (torch.arange(in_mask.shape[-1], dtype=in_mask.dtype, device=in_mask.device) + 1)
        # find the number of trailing zeros in repeat_values
        repeat_values = repeat_values[repeat_values > 0]
        trail = len(in_mask) - repeat_values[-1]
        # add a zero to the beginning of the repeat_values and take the diff
        repeat_values = torch.cat([torch.zeros_like(repeat_values[:1]), repeat_values], dim=-1).diff()
        a_ = torch.repeat_interleave(a, repeat_values, dim=-1)
        # add trail zeros to the end of a_
        a_ = F.pad(a_, pad=(0, trail), mode="constant", value=0.0)
        a_ = a_.reshape(outputs.shape)
        b_ = torch.repeat_interleave(b, repeat_values, dim=-1)
        b_ = F.pad(b_, pad=(0, trail), mode="constant", value=0.0)
        b_ = b_.reshape(logabsdet.shape)
        outputs = torch.where(inside_interval_mask, a_, outputs)
        logabsdet = torch.where(inside_interval_mask, b_, logabsdet)

    return outputs, logabsdet


def rational_quadratic_spline(
    inputs,
    unnormalized_widths,
    unnormalized_heights,
    unnormalized_derivatives,
    inverse=False,
    left=0.0,
    right=1.0,
    bottom=0.0,
    top=1.0,
    min_bin_width=DEFAULT_MIN_BIN_WIDTH,
    min_bin_height=DEFAULT_MIN_BIN_HEIGHT,
    min_derivative=DEFAULT_MIN_DERIVATIVE,
):
    if torch.min(inputs) < left or torch.max(inputs) > right:
        raise InputOutsideDomain()

    num_bins = unnormalized_widths.shape[-1]

    if min_bin_width * num_bins > 1.0:
        raise ValueError("Minimal bin width too large for the number of bins")
    if min_bin_height * num_bins > 1.0:
        raise ValueError("Minimal bin height too large for the number of bins")

    widths = F.softmax(unnormalized_widths, dim=-1)
    widths = min_bin_width + (1 - min_bin_width * num_bins) * widths
    cumwidths = torch.cumsum(widths, dim=-1)
    cumwidths = F.pad(cumwidths, pad=(1, 0), mode="constant", value=0.0)
    cumwidths = (right - left) * cumwidths + left
    cumwidths[..., 0] = left
    cumwidths[..., -1] = right
    widths = cumwidths[..., 1:] - cumwidths[..., :-1]

    derivatives = min_derivative + F.softplus(unnormalized_derivatives)

    heights = F.softmax(unnormalized_heights, dim=-1)
    heights = min_bin_height + (1 - min_bin_height * num_bins) * heights
    cumheights = torch.cumsum(heights, dim=-1)
    cumheights = F.pad(cumheights, pad=(1, 0), mode="constant", value=0.0)
    cumheights = (top - bottom) * cumheights + bottom
    cumheights[..., 0] = bottom
    cumheights[..., -1] = top
    heights = cumheights[..., 1:] - cumheights[..., :-1]

    bin_idx = searchsorted(cumwidths, inputs)[..., None]

    input_cumwidths = cumwidths.gather(-1, bin_idx)[..., 0]
    input_bin_widths = widths.gather(-1, bin_idx)[..., 0]

    input_cumheights = cumheights.gather(-1, bin_idx)[..., 0]
    delta = heights / widths
    input_delta = delta.gather(-1, bin_idx)[..., 0]

    input_derivatives = derivatives.gather(-1, bin_idx)[..., 0]
    input_derivatives_plus_one = derivatives[..., 1:].gather(-1, bin_idx)[..., 0]

    input_heights = heights.gather(-1, bin_idx)[..., 0]

    theta = (inputs - input_cumwidths) / input_bin_widths
    theta_one_minus_theta = theta * (1 - theta)

    numerator = input_heights * (
        input_delta * theta.pow(2) + input_derivatives * theta_one_minus_theta
    )
    denominator = input_delta + (
        (input_derivatives + input_derivatives_plus_one - 2 * input_delta)
        * theta_one_minus_theta
    )
    outputs = input_cumheights + numerator / denominator

    derivative_numerator = input_delta.pow(2) * (
        input_derivatives_plus_one * theta.pow(2)
        + 2 * input_delta * theta_one_minus_theta
        + input_derivatives * (1 - theta).pow(2)
    )
    logabsdet = torch.log(derivative_numerator) - 2 * torch.log(denominator)

    return outputs, logabsdet


class PiecewiseRationalQuadraticCoupling(nn.Module):
    def __init__(self, features=4, num_bins=5, tail_bound=1.0):
        super().__init__()
        self.num_bins = num_bins
        self.tail_bound = tail_bound
        self.features = features
        self.net = nn.Linear(features // 2, (features - features // 2) * (3 * num_bins - 1))

    def forward(self, inputs):
        identity, transform = inputs[:, : self.features // 2], inputs[:, self.features // 2 :]
        params = self.net(identity).view(inputs.shape[0], transform.shape[1], 3 * self.num_bins - 1)
        unnormalized_widths = params[..., : self.num_bins]
        unnormalized_heights = params[..., self.num_bins : 2 * self.num_bins]
        unnormalized_derivatives = params[..., 2 * self.num_bins :]
        out, logabsdet = unconstrained_rational_quadratic_spline(
            transform,
            unnormalized_widths=unnormalized_widths,
            unnormalized_heights=unnormalized_heights,
            unnormalized_derivatives=unnormalized_derivatives,
            tails="linear",
            tail_bound=self.tail_bound,
        )
        return torch.cat([identity, out], dim=1), logabsdet.sum(dim=1)


transform = torch.compile(PiecewiseRationalQuadraticCoupling())


def make():
    torch.manual_seed(0)
    inside = torch.rand(3, 4) * 1.6 - 0.8
    outside = torch.full((2, 4), 3.0)
    return PiecewiseRationalQuadraticCoupling(), [(inside,), (outside,)]
