"""torchvision DeepLabHead: ASPP branches, ASPPPooling iterating its own Sequential and interpolating back.

Source: pytorch/vision@0289e3fecda457ea9b473d84e2394b02d2ae8f13:torchvision/models/segmentation/deeplabv3.py:49-118
Kept: DeepLabHead(nn.Sequential) of ASPP + conv/bn/relu/conv; ASPPConv and
ASPPPooling as nn.Sequential subclasses; ASPPPooling.forward's
`size = x.shape[-2:]`, `for mod in self` loop and bilinear F.interpolate;
ASPP's ModuleList of branches built from `tuple(atrous_rates)`, the
list-append loop, torch.cat and the project Sequential with Dropout(0.5).
Simplified: out_channels 16 instead of 256 (the head's 256 literals follow
it), rates (1, 2, 3), a small feature map instead of a ResNet backbone.
"""
from typing import List

import torch
from torch import nn
from torch.nn import functional as F

OUT = 16


class DeepLabHead(nn.Sequential):
    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__(
            ASPP(in_channels, [1, 2, 3], OUT),
            nn.Conv2d(OUT, OUT, 3, padding=1, bias=False),
            nn.BatchNorm2d(OUT),
            nn.ReLU(),
            nn.Conv2d(OUT, num_classes, 1),
        )


class ASPPConv(nn.Sequential):
    def __init__(self, in_channels: int, out_channels: int, dilation: int) -> None:
        modules = [
            nn.Conv2d(in_channels, out_channels, 3, padding=dilation, dilation=dilation, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        ]
        super().__init__(*modules)


class ASPPPooling(nn.Sequential):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(in_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.shape[-2:]
        for mod in self:
            x = mod(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class ASPP(nn.Module):
    def __init__(self, in_channels: int, atrous_rates: List[int], out_channels: int = 256) -> None:
        super().__init__()
        modules = []
        modules.append(
            nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, bias=False), nn.BatchNorm2d(out_channels), nn.ReLU())
        )

        rates = tuple(atrous_rates)
        for rate in rates:
            modules.append(ASPPConv(in_channels, out_channels, rate))

        modules.append(ASPPPooling(in_channels, out_channels))

        self.convs = nn.ModuleList(modules)

        self.project = nn.Sequential(
            nn.Conv2d(len(self.convs) * out_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Dropout(0.5),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _res = []
        for conv in self.convs:
            _res.append(conv(x))
        res = torch.cat(_res, dim=1)
        return self.project(res)


head = torch.compile(DeepLabHead(4, 5).eval())


def make():
    torch.manual_seed(0)
    return DeepLabHead(4, 5).eval(), [(torch.randn(1, 4, 6, 6),), (torch.randn(2, 4, 5, 7),)]
