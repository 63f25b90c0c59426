"""torchvision BackboneWithFPN: IntermediateLayerGetter's OrderedDict of returned layers, FPN index-based block loops, LastLevelMaxPool (no break).

Source: pytorch/vision@v0.29.2:torchvision/models/_utils.py:14-73; torchvision/ops/feature_pyramid_network.py:12-221
Kept: IntermediateLayerGetter verbatim (the return_layers check in __init__,
the name-in-return_layers loop in forward), ExtraFPNBlock, FeaturePyramidNetwork
(get_result_from_inner_blocks / get_result_from_layer_blocks with their
`if i == idx` loops over ModuleLists, top-down nearest interpolation, the
extra block, the OrderedDict output) and LastLevelMaxPool.
Simplified: a 3-stage conv backbone; Conv2dNormActivation reduced to an nn.Conv2d with its default
`(kernel_size - 1) // 2` padding.
"""
from collections import OrderedDict
from typing import Callable, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class Conv2dNormActivation(nn.Conv2d):
    def __init__(self, in_channels, out_channels, kernel_size=1, padding=None, norm_layer=None, activation_layer=None):
        if padding is None:
            padding = (kernel_size - 1) // 2
        super().__init__(in_channels, out_channels, kernel_size, padding=padding)


class IntermediateLayerGetter(nn.ModuleDict):
    _version = 2
    __annotations__ = {'return_layers': dict[str, str]}

    def __init__(self, model: nn.Module, return_layers: dict[str, str]) -> None:
        if not set(return_layers).issubset([name for name, _ in model.named_children()]):
            raise ValueError('return_layers are not present in model')
        orig_return_layers = return_layers
        return_layers = {str(k): str(v) for k, v in return_layers.items()}
        layers = OrderedDict()
        for name, module in model.named_children():
            layers[name] = module
            if name in return_layers:
                del return_layers[name]
            if not return_layers:
                break
        super().__init__(layers)
        self.return_layers = orig_return_layers

    def forward(self, x):
        out = OrderedDict()
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out_name = self.return_layers[name]
                out[out_name] = x
        return out



class ExtraFPNBlock(nn.Module):

    def forward(self, results: list[Tensor], x: list[Tensor], names: list[str]) -> tuple[list[Tensor], list[str]]:
        pass


class FeaturePyramidNetwork(nn.Module):
    _version = 2

    def __init__(self, in_channels_list: list[int], out_channels: int, extra_blocks: Optional[ExtraFPNBlock]=None, norm_layer: Optional[Callable[..., nn.Module]]=None):
        super().__init__()
        self.inner_blocks = nn.ModuleList()
        self.layer_blocks = nn.ModuleList()
        for in_channels in in_channels_list:
            if in_channels == 0:
                raise ValueError('in_channels=0 is currently not supported')
            inner_block_module = Conv2dNormActivation(in_channels, out_channels, kernel_size=1, padding=0, norm_layer=norm_layer, activation_layer=None)
            layer_block_module = Conv2dNormActivation(out_channels, out_channels, kernel_size=3, norm_layer=norm_layer, activation_layer=None)
            self.inner_blocks.append(inner_block_module)
            self.layer_blocks.append(layer_block_module)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(m.weight, a=1)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
        if extra_blocks is not None:
            if not isinstance(extra_blocks, ExtraFPNBlock):
                raise TypeError(f'extra_blocks should be of type ExtraFPNBlock not {type(extra_blocks)}')
        self.extra_blocks = extra_blocks

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        version = local_metadata.get('version', None)
        if version is None or version < 2:
            num_blocks = len(self.inner_blocks)
            for block in ['inner_blocks', 'layer_blocks']:
                for i in range(num_blocks):
                    for type in ['weight', 'bias']:
                        old_key = f'{prefix}{block}.{i}.{type}'
                        new_key = f'{prefix}{block}.{i}.0.{type}'
                        if old_key in state_dict:
                            state_dict[new_key] = state_dict.pop(old_key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)

    def get_result_from_inner_blocks(self, x: Tensor, idx: int) -> Tensor:
        num_blocks = len(self.inner_blocks)
        if idx < 0:
            idx += num_blocks
        out = x
        for i, module in enumerate(self.inner_blocks):
            if i == idx:
                out = module(x)
        return out

    def get_result_from_layer_blocks(self, x: Tensor, idx: int) -> Tensor:
        num_blocks = len(self.layer_blocks)
        if idx < 0:
            idx += num_blocks
        out = x
        for i, module in enumerate(self.layer_blocks):
            if i == idx:
                out = module(x)
        return out

    def forward(self, x: dict[str, Tensor]) -> dict[str, Tensor]:
        names = list(x.keys())
        x = list(x.values())
        last_inner = self.get_result_from_inner_blocks(x[-1], -1)
        results = []
        results.append(self.get_result_from_layer_blocks(last_inner, -1))
        for idx in range(len(x) - 2, -1, -1):
            inner_lateral = self.get_result_from_inner_blocks(x[idx], idx)
            feat_shape = inner_lateral.shape[-2:]
            inner_top_down = F.interpolate(last_inner, size=feat_shape, mode='nearest')
            last_inner = inner_lateral + inner_top_down
            results.insert(0, self.get_result_from_layer_blocks(last_inner, idx))
        if self.extra_blocks is not None:
            results, names = self.extra_blocks(results, x, names)
        out = OrderedDict([(k, v) for k, v in zip(names, results)])
        return out


class LastLevelMaxPool(ExtraFPNBlock):

    def forward(self, x: list[Tensor], y: list[Tensor], names: list[str]) -> tuple[list[Tensor], list[str]]:
        names.append('pool')
        x.append(F.max_pool2d(x[-1], kernel_size=1, stride=2, padding=0))
        return (x, names)



class BackboneWithFPN(nn.Module):
    def __init__(self):
        super().__init__()
        backbone = nn.Sequential(OrderedDict([
            ("layer1", nn.Conv2d(3, 4, 3, stride=2, padding=1)),
            ("layer2", nn.Conv2d(4, 8, 3, stride=2, padding=1)),
            ("layer3", nn.Conv2d(8, 8, 3, stride=2, padding=1)),
        ]))
        self.body = IntermediateLayerGetter(backbone, return_layers={"layer2": "0", "layer3": "1"})
        self.fpn = FeaturePyramidNetwork(in_channels_list=[8, 8], out_channels=4, extra_blocks=LastLevelMaxPool())

    def forward(self, x):
        return self.fpn(self.body(x))


backbone = torch.compile(BackboneWithFPN())


def make():
    torch.manual_seed(0)
    return BackboneWithFPN(), [(torch.randn(1, 3, 16, 16),)]
