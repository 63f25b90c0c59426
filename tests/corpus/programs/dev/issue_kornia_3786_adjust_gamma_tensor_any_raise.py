"""kornia `adjust_gamma`: `if (gamma < 0.0).any(): raise ValueError(...)` validation before gamma correction.

Source: kornia/kornia#3786 (https://github.com/kornia/kornia/pull/3786)
The thread reports `torch.compile(adjust_gamma, fullgraph=True) -> Unsupported: Data-dependent branching`
from the gamma/gain validation. The function is translated from
kornia/kornia@0025b306e4c2a69ef3ae44607c8d618947e25ec3:kornia/enhance/adjust.py (adjust_gamma, pre-fix).
Kept: the isinstance/TypeError checks, float -> tensor promotion, `.to(device).to(dtype)`, both
`(x < 0.0).any()` ValueError guards, the unsqueeze broadcasting loops, pow/clamp, and the kornia
test's `torch.compile(op)` entry.
Simplified: docstring shortened; images 2x3x4x4.
"""
from typing import Union

import torch


def adjust_gamma(
    input: torch.Tensor, gamma: Union[float, torch.Tensor], gain: Union[float, torch.Tensor] = 1.0
) -> torch.Tensor:
    r"""Perform gamma correction on an image.

    The input image is expected to be in the range of [0, 1].
    """

    if not isinstance(input, torch.Tensor):
        raise TypeError(f"Input type is not a torch.Tensor. Got {type(input)}")

    if not isinstance(gamma, (float, torch.Tensor)):
        raise TypeError(f"The gamma should be a positive float or torch.Tensor. Got {type(gamma)}")

    if not isinstance(gain, (float, torch.Tensor)):
        raise TypeError(f"The gain should be a positive float or torch.Tensor. Got {type(gain)}")

    if isinstance(gamma, float):
        gamma = torch.tensor([gamma])

    if isinstance(gain, float):
        gain = torch.tensor([gain])

    gamma = gamma.to(input.device).to(input.dtype)
    gain = gain.to(input.device).to(input.dtype)

    if (gamma < 0.0).any():
        raise ValueError(f"Gamma must be non-negative. Got {gamma}")

    if (gain < 0.0).any():
        raise ValueError(f"Gain must be non-negative. Got {gain}")

    for _ in range(len(input.shape) - len(gamma.shape)):
        gamma = torch.unsqueeze(gamma, dim=-1)

    for _ in range(len(input.shape) - len(gain.shape)):
        gain = torch.unsqueeze(gain, dim=-1)

    # Apply the gamma correction
    x_adjust: torch.Tensor = gain * torch.pow(input, gamma)

    # Truncate between pixel values
    out: torch.Tensor = torch.clamp(x_adjust, 0.0, 1.0)

    return out


op_optimized = torch.compile(adjust_gamma)

RAISING_INPUTS = {2: "ValueError"}


def make():
    torch.manual_seed(0)
    img = torch.rand(2, 3, 4, 4)
    return adjust_gamma, [
        (img, 1.5, 2.0),
        (img, torch.tensor([1.0, 0.5]), torch.tensor([1.0, 2.0])),
        (img, torch.tensor([-1.0, 0.5]), 1.0),
    ]
