"""timm GlobalResponseNorm (ConvNeXt-V2) in channels-last blocks: norm over spatial dims, addcmul with reshaped affine params (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/grn.py:15-47
Kept: the constructor's channels_last switch picking spatial/channel dims and
wb_shape, and forward (L2 norm, mean-normalised response, torch.addcmul);
called inside a ConvNeXt-V2 style MLP on NHWC tensors.
Simplified: dim 4, mlp ratio 2.
"""
import torch
from torch import nn


class GlobalResponseNorm(nn.Module):
    def __init__(self, dim, eps=1e-6, channels_last=True):
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
    def __init__(self, dim=4, hidden=8):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.norm = GlobalResponseNorm(hidden, channels_last=True)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.norm(self.act(self.fc1(x))))


mlp = torch.compile(GlobalResponseNormMlp())


def make():
    torch.manual_seed(0)
    return GlobalResponseNormMlp(), [(torch.randn(2, 3, 3, 4),)]
