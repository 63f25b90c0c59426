"""torchvision FrozenBatchNorm2d in a detection backbone stem: buffers reshaped and folded into scale/bias each call (no break).

Source: pytorch/vision@v0.29.1:torchvision/ops/misc.py:14-63 and torchvision/models/resnet.py (Bottleneck with norm_layer=FrozenBatchNorm2d, as resnet_fpn_backbone builds it)
Kept: FrozenBatchNorm2d verbatim (register_buffer stats, _load_from_state_dict
dropping num_batches_tracked, the fuser-friendly forward) and the Bottleneck
forward with its downsample-is-not-None branch.
Simplified: one bottleneck, 8 -> 4 -> 8 channels.
"""
import torch
from torch import Tensor, nn


class FrozenBatchNorm2d(torch.nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(num_features))
        self.register_buffer("bias", torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        num_batches_tracked_key = prefix + "num_batches_tracked"
        if num_batches_tracked_key in state_dict:
            del state_dict[num_batches_tracked_key]
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)

    def forward(self, x: Tensor) -> Tensor:
        # move reshapes to the beginning
        # to make it fuser-friendly
        w = self.weight.reshape(1, -1, 1, 1)
        b = self.bias.reshape(1, -1, 1, 1)
        rv = self.running_var.reshape(1, -1, 1, 1)
        rm = self.running_mean.reshape(1, -1, 1, 1)
        scale = w * (rv + self.eps).rsqrt()
        bias = b - rm * scale
        return x * scale + bias


class Bottleneck(nn.Module):
    expansion: int = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, norm_layer=None):
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = norm_layer(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = norm_layer(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, 1, bias=False)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        identity = x

        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)

        out = self.conv2(out)
        out = self.bn2(out)
        out = self.relu(out)

        out = self.conv3(out)
        out = self.bn3(out)

        if self.downsample is not None:
            identity = self.downsample(x)

        out += identity
        out = self.relu(out)

        return out


def build_block():
    downsample = nn.Sequential(nn.Conv2d(8, 16, 1, stride=2, bias=False), FrozenBatchNorm2d(16))
    return Bottleneck(8, 4, stride=2, downsample=downsample, norm_layer=FrozenBatchNorm2d)


backbone_block = torch.compile(build_block())


def make():
    torch.manual_seed(0)
    return build_block(), [(torch.randn(1, 8, 6, 6),)]
