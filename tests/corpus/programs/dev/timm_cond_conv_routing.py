"""timm CondConv2d in an EfficientNet CondConv block: routing weights from pooled features, per-sample weights via matmul and grouped conv (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/cond_conv2d.py:100-139; timm/models/_efficientnet_blocks.py:CondConvResidual
Kept: CondConv2d.forward (matmul of routing weights with the expert weight
bank, the per-sample weight shape, optional bias, the B*C reshape, the
dynamic_padding switch, grouped conv by groups * B, permute/view back) and the
routing fn (adaptive avg pool, flatten, linear, sigmoid).
Simplified: 2 experts, 4 channels, 3x3, static padding.
"""
import torch
import torch.nn.functional as F
from torch import nn


class CondConv2d(nn.Module):
    def __init__(self, in_channels=4, out_channels=4, kernel_size=3, padding=1, num_experts=2, groups=1, bias=True):
        super().__init__()
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = (kernel_size, kernel_size)
        self.stride, self.padding, self.dilation, self.groups = 1, padding, 1, groups
        self.dynamic_padding = False
        self.num_experts = num_experts
        self.weight_shape = (self.out_channels, self.in_channels // self.groups) + self.kernel_size
        weight_num_param = 1
        for wd in self.weight_shape:
            weight_num_param *= wd
        self.weight = nn.Parameter(torch.randn(self.num_experts, weight_num_param) * 0.1)
        self.bias = nn.Parameter(torch.zeros(self.num_experts, self.out_channels)) if bias else None

    def forward(self, x, routing_weights):
        B, C, H, W = x.shape
        weight = torch.matmul(routing_weights, self.weight)
        new_weight_shape = (B * self.out_channels, self.in_channels // self.groups) + self.kernel_size
        weight = weight.view(new_weight_shape)
        bias = None
        if self.bias is not None:
            bias = torch.matmul(routing_weights, self.bias)
            bias = bias.view(B * self.out_channels)
        x = x.reshape(1, B * C, H, W)
        if self.dynamic_padding:
            raise NotImplementedError
        else:
            out = F.conv2d(x, weight, bias, stride=self.stride, padding=self.padding, dilation=self.dilation, groups=self.groups * B)
        out = out.permute([1, 0, 2, 3]).view(B, self.out_channels, out.shape[-2], out.shape[-1])
        return out


class CondConvResidual(nn.Module):
    def __init__(self, chs=4, num_experts=2):
        super().__init__()
        self.routing_fn = nn.Linear(chs, num_experts)
        self.conv_dw = CondConv2d(chs, chs, num_experts=num_experts)

    def forward(self, x):
        shortcut = x
        pooled_inputs = F.adaptive_avg_pool2d(x, 1).flatten(1)
        routing_weights = torch.sigmoid(self.routing_fn(pooled_inputs))
        x = self.conv_dw(x, routing_weights)
        return x + shortcut


model = torch.compile(CondConvResidual())


def make():
    torch.manual_seed(0)
    return CondConvResidual(), [(torch.randn(2, 4, 5, 5),)]
