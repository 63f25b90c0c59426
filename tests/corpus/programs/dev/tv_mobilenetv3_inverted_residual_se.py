"""torchvision MobileNetV3 InvertedResidual with SqueezeExcitation: _make_divisible at init, use_res_connect in-place add (no break).

Source: pytorch/vision@v0.29.2:torchvision/ops/misc.py:225-261; torchvision/models/mobilenetv3.py:20-115; torchvision/models/_utils.py:_make_divisible
Kept: SqueezeExcitation (_scale with avgpool/fc1/act/fc2/hardsigmoid),
_make_divisible, InvertedResidual construction from a config (expand, depthwise,
optional SE, project) and forward's `if self.use_res_connect: result += input`.
Simplified: Conv2dNormActivation is conv + BN + optional activation; 8 channels.
"""
from functools import partial

import torch
from torch import Tensor, nn


def _make_divisible(v: float, divisor: int, min_value=None) -> int:
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class SqueezeExcitation(torch.nn.Module):
    def __init__(self, input_channels, squeeze_channels, activation=torch.nn.ReLU, scale_activation=torch.nn.Sigmoid):
        super().__init__()
        self.avgpool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc1 = torch.nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = torch.nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def _scale(self, input: Tensor) -> Tensor:
        scale = self.avgpool(input)
        scale = self.fc1(scale)
        scale = self.activation(scale)
        scale = self.fc2(scale)
        return self.scale_activation(scale)

    def forward(self, input: Tensor) -> Tensor:
        scale = self._scale(input)
        return scale * input


def conv_norm_act(in_ch, out_ch, kernel_size=1, stride=1, groups=1, activation_layer=nn.Hardswish):
    layers = [nn.Conv2d(in_ch, out_ch, kernel_size, stride, kernel_size // 2, groups=groups, bias=False), nn.BatchNorm2d(out_ch)]
    if activation_layer is not None:
        layers.append(activation_layer())
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, input_channels=8, expanded_channels=16, out_channels=8, kernel=3, stride=1, use_se=True, se_layer=partial(SqueezeExcitation, scale_activation=nn.Hardsigmoid)):
        super().__init__()
        self.use_res_connect = stride == 1 and input_channels == out_channels
        layers = []
        if expanded_channels != input_channels:
            layers.append(conv_norm_act(input_channels, expanded_channels))
        layers.append(conv_norm_act(expanded_channels, expanded_channels, kernel, stride, groups=expanded_channels))
        if use_se:
            squeeze_channels = _make_divisible(expanded_channels // 4, 8)
            layers.append(se_layer(expanded_channels, squeeze_channels))
        layers.append(conv_norm_act(expanded_channels, out_channels, activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.out_channels = out_channels
        self._is_cn = stride > 1

    def forward(self, input: Tensor) -> Tensor:
        result = self.block(input)
        if self.use_res_connect:
            result += input
        return result


block = torch.compile(InvertedResidual().eval())


def make():
    torch.manual_seed(0)
    return InvertedResidual().eval(), [(torch.randn(2, 8, 5, 5),)]
