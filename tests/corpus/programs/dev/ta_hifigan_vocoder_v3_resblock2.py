"""torchaudio prototype HiFiGANVocoder (V3 layout, ResBlock2): resblocks picked from a ModuleList by `i * self.num_kernels + j` under a TorchScript interface annotation, summed into zeros_like.

Source: pytorch/audio@01374e7d8c:src/torchaudio/prototype/models/hifi_gan.py:HiFiGANVocoder,ResBlockInterface,ResBlock1,ResBlock2,get_padding,hifigan_vocoder,hifigan_vocoder_v3
Kept: HiFiGANVocoder.__init__ (ConvTranspose1d ups list, resblock choice by
resblock_type, per-upsample resblocks), forward (leaky_relu, upsample,
`xs = torch.zeros_like(x)`, `res_block: ResBlockInterface =
self.resblocks[i * self.num_kernels + j]`, `xs += res_block.forward(x)`,
division by num_kernels, tanh), the `@torch.jit.interface` ResBlockInterface,
ResBlock1 and ResBlock2, get_padding, the hifigan_vocoder factory and the
v3 factory's layout; an eval vocoder compiled.
Simplified: channel counts and mel bins shrunk (16 mels, 32 initial
channels), upsample rates (2, 2, 2) with kernels (4, 4, 4).
"""
from typing import Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import Conv1d, ConvTranspose1d


class HiFiGANVocoder(torch.nn.Module):
    def __init__(
        self,
        in_channels: int,
        upsample_rates: Tuple[int, ...],
        upsample_initial_channel: int,
        upsample_kernel_sizes: Tuple[int, ...],
        resblock_kernel_sizes: Tuple[int, ...],
        resblock_dilation_sizes: Tuple[Tuple[int, ...], ...],
        resblock_type: int,
        lrelu_slope: float,
    ):
        super(HiFiGANVocoder, self).__init__()
        self.num_kernels = len(resblock_kernel_sizes)
        self.num_upsamples = len(upsample_rates)
        self.conv_pre = Conv1d(in_channels, upsample_initial_channel, 7, 1, padding=3)
        resblock = ResBlock1 if resblock_type == 1 else ResBlock2

        self.ups = nn.ModuleList()
        for i, (u, k) in enumerate(zip(upsample_rates, upsample_kernel_sizes)):
            self.ups.append(
                ConvTranspose1d(
                    upsample_initial_channel // (2**i),
                    upsample_initial_channel // (2 ** (i + 1)),
                    k,
                    u,
                    padding=(k - u) // 2,
                )
            )

        self.resblocks = nn.ModuleList()
        for i in range(len(self.ups)):
            ch = upsample_initial_channel // (2 ** (i + 1))
            for (k, d) in zip(resblock_kernel_sizes, resblock_dilation_sizes):
                self.resblocks.append(resblock(ch, k, d, lrelu_slope))

        self.conv_post = Conv1d(ch, 1, 7, 1, padding=3)
        self.lrelu_slope = lrelu_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_pre(x)
        for i, upsampling_layer in enumerate(self.ups):
            x = F.leaky_relu(x, self.lrelu_slope)
            x = upsampling_layer(x)
            xs = torch.zeros_like(x)
            for j in range(self.num_kernels):
                res_block: ResBlockInterface = self.resblocks[i * self.num_kernels + j]
                xs += res_block.forward(x)
            x = xs / self.num_kernels

        x = F.leaky_relu(x)
        x = self.conv_post(x)
        x = torch.tanh(x)

        return x


@torch.jit.interface
class ResBlockInterface(torch.nn.Module):
    """Interface for ResBlock - necessary to make type annotations in ``HiFiGANVocoder.forward`` compatible
    with TorchScript
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pass


class ResBlock1(torch.nn.Module):
    def __init__(
        self, channels: int, kernel_size: int = 3, dilation: Tuple[int, int, int] = (1, 3, 5), lrelu_slope: float = 0.1
    ):
        super(ResBlock1, self).__init__()
        self.convs1 = nn.ModuleList(
            [
                Conv1d(channels, channels, kernel_size, 1, dilation=dilation[0],
                       padding=get_padding(kernel_size, dilation[0])),
                Conv1d(channels, channels, kernel_size, 1, dilation=dilation[1],
                       padding=get_padding(kernel_size, dilation[1])),
                Conv1d(channels, channels, kernel_size, 1, dilation=dilation[2],
                       padding=get_padding(kernel_size, dilation[2])),
            ]
        )

        self.convs2 = nn.ModuleList(
            [
                Conv1d(channels, channels, kernel_size, 1, dilation=1, padding=get_padding(kernel_size, 1)),
                Conv1d(channels, channels, kernel_size, 1, dilation=1, padding=get_padding(kernel_size, 1)),
                Conv1d(channels, channels, kernel_size, 1, dilation=1, padding=get_padding(kernel_size, 1)),
            ]
        )
        self.lrelu_slope = lrelu_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for conv1, conv2 in zip(self.convs1, self.convs2):
            xt = F.leaky_relu(x, self.lrelu_slope)
            xt = conv1(xt)
            xt = F.leaky_relu(xt, self.lrelu_slope)
            xt = conv2(xt)
            x = xt + x
        return x


class ResBlock2(torch.nn.Module):
    def __init__(
        self, channels: int, kernel_size: int = 3, dilation: Tuple[int, int] = (1, 3), lrelu_slope: float = 0.1
    ):
        super(ResBlock2, self).__init__()
        self.convs = nn.ModuleList(
            [
                Conv1d(channels, channels, kernel_size, 1, dilation=dilation[0],
                       padding=get_padding(kernel_size, dilation[0])),
                Conv1d(channels, channels, kernel_size, 1, dilation=dilation[1],
                       padding=get_padding(kernel_size, dilation[1])),
            ]
        )
        self.lrelu_slope = lrelu_slope

    def forward(self, x: torch.Tensor):
        for c in self.convs:
            xt = F.leaky_relu(x, self.lrelu_slope)
            xt = c(xt)
            x = xt + x
        return x


def get_padding(kernel_size, dilation=1):
    """Find padding for which 1D convolution preserves the input shape."""
    return int((kernel_size * dilation - dilation) / 2)


def hifigan_vocoder(
    in_channels: int,
    upsample_rates: Tuple[int, ...],
    upsample_initial_channel: int,
    upsample_kernel_sizes: Tuple[int, ...],
    resblock_kernel_sizes: Tuple[int, ...],
    resblock_dilation_sizes: Tuple[Tuple[int, ...], ...],
    resblock_type: int,
    lrelu_slope: float,
) -> HiFiGANVocoder:
    return HiFiGANVocoder(
        upsample_rates=upsample_rates,
        resblock_kernel_sizes=resblock_kernel_sizes,
        resblock_dilation_sizes=resblock_dilation_sizes,
        resblock_type=resblock_type,
        upsample_initial_channel=upsample_initial_channel,
        upsample_kernel_sizes=upsample_kernel_sizes,
        in_channels=in_channels,
        lrelu_slope=lrelu_slope,
    )


def hifigan_vocoder_v3_tiny() -> HiFiGANVocoder:
    return hifigan_vocoder(
        upsample_rates=(2, 2, 2),
        upsample_kernel_sizes=(4, 4, 4),
        upsample_initial_channel=32,
        resblock_kernel_sizes=(3, 5, 7),
        resblock_dilation_sizes=((1, 2), (2, 6), (3, 12)),
        resblock_type=2,
        in_channels=16,
        lrelu_slope=0.1,
    )


vocoder = torch.compile(hifigan_vocoder_v3_tiny().eval())


def make():
    torch.manual_seed(0)
    return hifigan_vocoder_v3_tiny().eval(), [(torch.randn(1, 16, 12),), (torch.randn(2, 16, 20),)]
