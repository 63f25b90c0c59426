"""timm ScaledStdConv2d (NFNet): weight standardisation through F.batch_norm on the reshaped weight, gain and fan-in scale (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/std_conv.py:120-169
Kept: the constructor's scale = gamma * fan_in**-0.5, gain parameter and
reset_parameters' hasattr guard, forward's F.batch_norm over the weight with
training=True / momentum 0, reshape_as and F.conv2d with the module's
stride/padding/dilation/groups; used in an NF residual block.
Simplified: 4 channels, 3x3 kernel.
"""
import torch
import torch.nn.functional as F
from torch import nn


class ScaledStdConv2d(nn.Conv2d):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=1, dilation=1, groups=1, bias=True, gamma=1.0, eps=1e-6, gain_init=1.0):
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation, groups=groups, bias=bias)
        self.scale = gamma * self.weight[0].numel() ** -0.5
        self.eps = eps
        self.gain_init = gain_init
        self.gain = nn.Parameter(torch.empty((self.out_channels, 1, 1, 1)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if hasattr(self, 'gain'):
            torch.nn.init.constant_(self.gain, self.gain_init)
        super().reset_parameters()

    def forward(self, x):
        weight = F.batch_norm(
            self.weight.reshape(1, self.out_channels, -1), None, None,
            weight=(self.gain * self.scale).view(-1), training=True, momentum=0., eps=self.eps,
        ).reshape_as(self.weight)
        return F.conv2d(x, weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class NormFreeBlock(nn.Module):
    def __init__(self, chs=4, alpha=0.2, beta=1.0):
        super().__init__()
        self.alpha, self.beta = alpha, beta
        self.conv1 = ScaledStdConv2d(chs, chs, 3)
        self.conv2 = ScaledStdConv2d(chs, chs, 3)
        self.act = nn.GELU()

    def forward(self, x):
        out = self.act(x) * self.beta
        shortcut = x
        out = self.conv2(self.act(self.conv1(out)))
        return out * self.alpha + shortcut


block = torch.compile(NormFreeBlock())


def make():
    torch.manual_seed(0)
    return NormFreeBlock(), [(torch.randn(2, 4, 5, 5),)]
