"""timm LayerNorm2d with fast norm enabled (set_fast_norm()): apex import probe, autocast queries in try/except, autocast-disabled layer_norm (no break expected).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/fast_norm.py:14-110; timm/layers/norm.py:115-134
Kept: the apex try/except import flag, _USE_FAST_NORM with set_fast_norm,
get_autocast_dtype / is_autocast_enabled with their TypeError fallbacks,
fast_layer_norm (is_scripting, has_apex, the autocast cast, the
`torch.amp.autocast(enabled=False)` block) and LayerNorm2d's permute/_fast_norm switch.
Simplified: used in a ConvNeXt-style stem; 4 channels.
"""
from typing import List, Optional

import torch
import torch.nn.functional as F
from torch import nn

try:
    from apex.normalization.fused_layer_norm import fused_layer_norm_affine
    has_apex = True
except ImportError:
    has_apex = False

_USE_FAST_NORM = False


def set_fast_norm(enable=True):
    global _USE_FAST_NORM
    _USE_FAST_NORM = enable


def is_fast_norm():
    return _USE_FAST_NORM


def get_autocast_dtype(device: str = 'cuda'):
    try:
        return torch.get_autocast_dtype(device)
    except (AttributeError, TypeError):
        if device == 'cpu':
            return torch.get_autocast_cpu_dtype()
        return torch.get_autocast_gpu_dtype()


def is_autocast_enabled(device: str = 'cuda'):
    try:
        return torch.is_autocast_enabled(device)
    except TypeError:
        if device == 'cpu':
            return torch.is_autocast_cpu_enabled()
        return torch.is_autocast_enabled()


def fast_layer_norm(x, normalized_shape: List[int], weight: Optional[torch.Tensor] = None, bias: Optional[torch.Tensor] = None, eps: float = 1e-05):
    if torch.jit.is_scripting():
        return F.layer_norm(x, normalized_shape, weight, bias, eps)
    if has_apex:
        return fused_layer_norm_affine(x, weight, bias, normalized_shape, eps)
    if is_autocast_enabled(x.device.type):
        dt = get_autocast_dtype(x.device.type)
        x, weight, bias = x.to(dt), weight.to(dt) if weight is not None else None, bias.to(dt) if bias is not None else None
    with torch.amp.autocast(device_type=x.device.type, enabled=False):
        return F.layer_norm(x, normalized_shape, weight, bias, eps)


class LayerNorm2d(nn.LayerNorm):
    def __init__(self, num_channels: int, eps: float = 1e-6, affine: bool = True, **kwargs):
        super().__init__(num_channels, eps=eps, elementwise_affine=affine, **kwargs)
        self._fast_norm = is_fast_norm()

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        if self._fast_norm:
            x = fast_layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        else:
            x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        x = x.permute(0, 3, 1, 2)
        return x


def create_stem():
    set_fast_norm()
    return nn.Sequential(nn.Conv2d(3, 4, 2, 2), LayerNorm2d(4))


stem = torch.compile(create_stem())


def make():
    torch.manual_seed(0)
    return create_stem(), [(torch.randn(1, 3, 4, 4),)]
