"""torchvision FeaturePyramidNetwork with RetinaNet's LastLevelP6P7 extra block: `use_P5` picks p5 or c5, p.extend / names.extend on the lists the FPN passes in.

Source: pytorch/vision@ae001031b17f68322269db2d86da2cfc502b01e4:torchvision/ops/feature_pyramid_network.py:10-190
Kept: ExtraFPNBlock, FeaturePyramidNetwork (in_channels validation, the
kaiming init loop over self.modules(), the extra_blocks isinstance assert,
get_result_from_inner_blocks / get_result_from_layer_blocks with negative
idx wrap and the TorchScript-friendly enumerate loop, forward unpacking
names/values, reverse range loop with results.insert(0, ...), extra
blocks, OrderedDict rebuild) and LastLevelP6P7 (its own kaiming init,
use_P5 = in_channels == out_channels, p6/p7 convs, extend), wrapped the way
BackboneWithFPN does for RetinaNet (returned_layers [2, 3, 4] and
extra_blocks=LastLevelP6P7(...)).
Simplified: _log_api_usage_once is dropped; the backbone is three strided
convs returning an OrderedDict ("0", "1", "2") instead of
IntermediateLayerGetter over a ResNet; 8 output channels.
"""
from collections import OrderedDict
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn, Tensor


class ExtraFPNBlock(nn.Module):
    def forward(
        self,
        results: List[Tensor],
        x: List[Tensor],
        names: List[str],
    ) -> Tuple[List[Tensor], List[str]]:
        pass


class FeaturePyramidNetwork(nn.Module):
    def __init__(
        self,
        in_channels_list: List[int],
        out_channels: int,
        extra_blocks: Optional[ExtraFPNBlock] = None,
    ):
        super().__init__()
        self.inner_blocks = nn.ModuleList()
        self.layer_blocks = nn.ModuleList()
        for in_channels in in_channels_list:
            if in_channels == 0:
                raise ValueError("in_channels=0 is currently not supported")
            inner_block_module = nn.Conv2d(in_channels, out_channels, 1)
            layer_block_module = nn.Conv2d(out_channels, out_channels, 3, padding=1)
            self.inner_blocks.append(inner_block_module)
            self.layer_blocks.append(layer_block_module)

        # initialize parameters now to avoid modifying the initialization of top_blocks
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(m.weight, a=1)
                nn.init.constant_(m.bias, 0)

        if extra_blocks is not None:
            assert isinstance(extra_blocks, ExtraFPNBlock)
        self.extra_blocks = extra_blocks

    def get_result_from_inner_blocks(self, x: Tensor, idx: int) -> Tensor:
        """
        This is equivalent to self.inner_blocks[idx](x),
        but torchscript doesn't support this yet
        """
        num_blocks = len(self.inner_blocks)
        if idx < 0:
            idx += num_blocks
        out = x
        for i, module in enumerate(self.inner_blocks):
            if i == idx:
                out = module(x)
        return out

    def get_result_from_layer_blocks(self, x: Tensor, idx: int) -> Tensor:
        """
        This is equivalent to self.layer_blocks[idx](x),
        but torchscript doesn't support this yet
        """
        num_blocks = len(self.layer_blocks)
        if idx < 0:
            idx += num_blocks
        out = x
        for i, module in enumerate(self.layer_blocks):
            if i == idx:
                out = module(x)
        return out

    def forward(self, x: Dict[str, Tensor]) -> Dict[str, Tensor]:
        # unpack OrderedDict into two lists for easier handling
        names = list(x.keys())
        x = list(x.values())

        last_inner = self.get_result_from_inner_blocks(x[-1], -1)
        results = []
        results.append(self.get_result_from_layer_blocks(last_inner, -1))

        for idx in range(len(x) - 2, -1, -1):
            inner_lateral = self.get_result_from_inner_blocks(x[idx], idx)
            feat_shape = inner_lateral.shape[-2:]
            inner_top_down = F.interpolate(last_inner, size=feat_shape, mode="nearest")
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self.get_result_from_layer_blocks(last_inner, idx))

        if self.extra_blocks is not None:
            results, names = self.extra_blocks(results, x, names)

        # make it back an OrderedDict
        out = OrderedDict([(k, v) for k, v in zip(names, results)])

        return out


class LastLevelMaxPool(ExtraFPNBlock):
    """
    Applies a max_pool2d on top of the last feature map
    """

    def forward(
        self,
        x: List[Tensor],
        y: List[Tensor],
        names: List[str],
    ) -> Tuple[List[Tensor], List[str]]:
        names.append("pool")
        x.append(F.max_pool2d(x[-1], 1, 2, 0))
        return x, names


class LastLevelP6P7(ExtraFPNBlock):
    """
    This module is used in RetinaNet to generate extra layers, P6 and P7.
    """

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.p6 = nn.Conv2d(in_channels, out_channels, 3, 2, 1)
        self.p7 = nn.Conv2d(out_channels, out_channels, 3, 2, 1)
        for module in [self.p6, self.p7]:
            nn.init.kaiming_uniform_(module.weight, a=1)
            nn.init.constant_(module.bias, 0)
        self.use_P5 = in_channels == out_channels

    def forward(
        self,
        p: List[Tensor],
        c: List[Tensor],
        names: List[str],
    ) -> Tuple[List[Tensor], List[str]]:
        p5, c5 = p[-1], c[-1]
        x = p5 if self.use_P5 else c5
        p6 = self.p6(x)
        p7 = self.p7(F.relu(p6))
        p.extend([p6, p7])
        names.extend(["p6", "p7"])
        return p, names


class TinyBackbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Conv2d(3, 4, 3, 2, 1), nn.ReLU())
        self.layer2 = nn.Sequential(nn.Conv2d(4, 8, 3, 2, 1), nn.ReLU())
        self.layer3 = nn.Sequential(nn.Conv2d(8, 16, 3, 2, 1), nn.ReLU())

    def forward(self, x):
        out = OrderedDict()
        x = self.layer1(x)
        out["0"] = x
        x = self.layer2(x)
        out["1"] = x
        x = self.layer3(x)
        out["2"] = x
        return out


class BackboneWithFPN(nn.Module):
    def __init__(self, backbone, in_channels_list, out_channels, extra_blocks=None):
        super().__init__()
        if extra_blocks is None:
            extra_blocks = LastLevelMaxPool()
        self.body = backbone
        self.fpn = FeaturePyramidNetwork(
            in_channels_list=in_channels_list,
            out_channels=out_channels,
            extra_blocks=extra_blocks,
        )
        self.out_channels = out_channels

    def forward(self, x: Tensor) -> Dict[str, Tensor]:
        x = self.body(x)
        x = self.fpn(x)
        return x


def build(p6p7_from_p5=True):
    # torchvision's retinanet_resnet50_fpn_v2 builds LastLevelP6P7(2048, 256) (from C5);
    # retinanet_resnet50_fpn builds LastLevelP6P7(256, 256) (from P5)
    in_p6 = 8 if p6p7_from_p5 else 16
    return BackboneWithFPN(TinyBackbone(), [4, 8, 16], 8, extra_blocks=LastLevelP6P7(in_p6, 8))


backbone = torch.compile(build())


def make():
    torch.manual_seed(0)
    return build(True), [(torch.randn(1, 3, 32, 32),), (torch.randn(2, 3, 24, 40),)]
