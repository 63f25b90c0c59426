"""torchaudio mu_law_encoding: a non-float input triggers warnings.warn before the cast.

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/functional.py:670-700
Kept: mu from quantization_channels, the is_floating_point warning and cast,
torch.tensor(mu, dtype=...), the sign/log1p companding and int64 rounding; the
MuLawEncoding transform wrapper.
Simplified: nothing else.
"""
import warnings

import torch
from torch import Tensor


def mu_law_encoding(x: Tensor, quantization_channels: int) -> Tensor:
    mu = quantization_channels - 1.0
    if not x.is_floating_point():
        warnings.warn(
            "The input Tensor must be of floating type. \
            This will be an error in the v0.12 release."
        )
        x = x.to(torch.float)
    mu = torch.tensor(mu, dtype=x.dtype)
    x_mu = torch.sign(x) * torch.log1p(mu * torch.abs(x)) / torch.log1p(mu)
    x_mu = ((x_mu + 1) / 2 * mu + 0.5).to(torch.int64)
    return x_mu


class MuLawEncoding(torch.nn.Module):
    __constants__ = ["quantization_channels"]

    def __init__(self, quantization_channels: int = 256) -> None:
        super().__init__()
        self.quantization_channels = quantization_channels

    def forward(self, x: Tensor) -> Tensor:
        return mu_law_encoding(x, self.quantization_channels)


encoder = torch.compile(MuLawEncoding(256))


def make():
    torch.manual_seed(0)
    return MuLawEncoding(256), [(torch.rand(2, 16) * 2 - 1,), (torch.randint(-1, 2, (2, 16)),)]
