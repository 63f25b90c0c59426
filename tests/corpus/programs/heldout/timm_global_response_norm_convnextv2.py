"""timm ConvNeXt-V2 block with GlobalResponseNorm: layout picked at construction (channels_last flag), fused addcmul in forward (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/grn.py:17-46 and timm/models/convnext.py (ConvNeXtBlock.forward)
Kept: GlobalResponseNorm verbatim (the spatial/channel dims and wb_shape set in
__init__ from channels_last) and the ConvNeXt block's conv_mlp / NHWC permute
branches, layer scale gamma when not None, and the shortcut.
Simplified: Mlp is two linears with GELU and GRN between; dim 8.
"""
import torch
from torch import nn as nn


class GlobalResponseNorm(nn.Module):
    """ Global Response Normalization layer
    """
    def __init__(self, dim: int, eps: float = 1e-6, channels_last: bool = True):
        super().__init__()
        self.eps = eps
        if channels_last:
            self.spatial_dim = (1, 2)
            self.channel_dim = -1
            self.wb_shape = (1, 1, 1, -1)
        else:
            self.spatial_dim = (2, 3)
            self.channel_dim = 1
            self.wb_shape = (1, -1, 1, 1)

        self.weight = nn.Parameter(torch.zeros(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        x_g = x.norm(p=2, dim=self.spatial_dim, keepdim=True)
        x_n = x_g / (x_g.mean(dim=self.channel_dim, keepdim=True) + self.eps)
        return x + torch.addcmul(self.bias.view(self.wb_shape), self.weight.view(self.wb_shape), x * x_n)


class GlobalResponseNormMlp(nn.Module):
    def __init__(self, in_features, hidden_features, use_conv=False):
        super().__init__()
        self.fc1 = nn.Conv2d(in_features, hidden_features, 1) if use_conv else nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.grn = GlobalResponseNorm(hidden_features, channels_last=not use_conv)
        self.fc2 = nn.Conv2d(hidden_features, in_features, 1) if use_conv else nn.Linear(hidden_features, in_features)

    def forward(self, x):
        x = self.fc1(x)
        x = self.act(x)
        x = self.grn(x)
        return self.fc2(x)


class ConvNeXtBlock(nn.Module):
    def __init__(self, in_chs=8, conv_mlp=False, ls_init_value=None):
        super().__init__()
        self.use_conv_mlp = conv_mlp
        self.conv_dw = nn.Conv2d(in_chs, in_chs, 7, padding=3, groups=in_chs)
        self.norm = nn.LayerNorm(in_chs) if not conv_mlp else nn.GroupNorm(1, in_chs)
        self.mlp = GlobalResponseNormMlp(in_chs, 4 * in_chs, use_conv=conv_mlp)
        self.gamma = nn.Parameter(ls_init_value * torch.ones(in_chs)) if ls_init_value is not None else None

    def forward(self, x):
        shortcut = x
        x = self.conv_dw(x)
        if self.use_conv_mlp:
            x = self.norm(x)
            x = self.mlp(x)
        else:
            x = x.permute(0, 2, 3, 1)
            x = self.norm(x)
            x = self.mlp(x)
            x = x.permute(0, 3, 1, 2)
        if self.gamma is not None:
            x = x.mul(self.gamma.reshape(1, -1, 1, 1))
        return x + shortcut


class TwoBlocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.nhwc = ConvNeXtBlock(conv_mlp=False)
        self.nchw = ConvNeXtBlock(conv_mlp=True, ls_init_value=1e-6)

    def forward(self, x):
        return self.nchw(self.nhwc(x))


@torch.compile
def forward_features(model, x):
    return model(x)


def make():
    torch.manual_seed(0)
    return forward_features._torchdynamo_orig_callable, [(TwoBlocks(), torch.randn(1, 8, 5, 5))]
