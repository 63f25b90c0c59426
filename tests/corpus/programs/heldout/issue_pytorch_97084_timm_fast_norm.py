"""timm's fast-norm LayerNorm2d: low-precision layer norm through autocast helpers (`set_fast_norm(True)`).

Source: https://github.com/pytorch/pytorch/issues/97084 (timm/layers/fast_norm.py and timm/layers/norm.py
LayerNorm2d as used by convnext_tiny)
Kept: `is_fast_norm`/`set_fast_norm` module flag, `get_autocast_dtype`, `fast_layer_norm` (jit.is_scripting
check, autocast dtype cast, `torch.amp.autocast(enabled=False)` around F.layer_norm), LayerNorm2d with
its `_fast_norm` switch, a ConvNeXt-style stem; the reporter's entry was `dynamo.explain(model, ...)`.
Simplified: no apex path; stem + one norm.
"""
import torch
import torch.nn.functional as F
from torch import nn

_USE_FAST_NORM = False


def is_fast_norm():
    return _USE_FAST_NORM


def set_fast_norm(enable=True):
    global _USE_FAST_NORM
    _USE_FAST_NORM = enable


def get_autocast_dtype(device="cuda"):
    return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else torch.float32


def fast_layer_norm(x, normalized_shape, weight, bias, eps=1e-5):
    if torch.jit.is_scripting():
        # currently cannot use is_autocast_enabled within torchscript
        return F.layer_norm(x, normalized_shape, weight, bias, eps)
    if torch.is_autocast_enabled(x.device.type):
        # normally native AMP casts LN inputs to float32
        # here we use the low precision autocast dtype
        dt = get_autocast_dtype(x.device.type)
        x, weight, bias = x.to(dt), weight.to(dt), bias.to(dt) if bias is not None else None
    with torch.amp.autocast(device_type=x.device.type, enabled=False):
        x = F.layer_norm(x, normalized_shape, weight, bias, eps)
    return x


class LayerNorm2d(nn.LayerNorm):
    """ LayerNorm for channels of '2D' spatial NCHW tensors """

    def __init__(self, num_channels, eps=1e-6, affine=True):
        super().__init__(num_channels, eps=eps, elementwise_affine=affine)
        self._fast_norm = is_fast_norm()  # can't script unless we have these flags here (no globals)

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        if self._fast_norm:
            x = fast_layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        else:
            x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        x = x.permute(0, 3, 1, 2)
        return x


class ConvNeXtStem(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=4, stride=4)
        self.norm = LayerNorm2d(8)

    def forward(self, x):
        return self.norm(self.conv(x))


set_fast_norm(enable=True)
model = ConvNeXtStem()
explanation = torch._dynamo.explain(model)


def make():
    torch.manual_seed(0)
    set_fast_norm(enable=True)
    return ConvNeXtStem(), [(torch.randn(1, 3, 16, 16),)]
