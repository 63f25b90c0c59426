"""timm EvoNorm2dB0: training updates running_var with copy_, eval reads it; max of two normalisers (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/evo_norm.py:128-146
Kept: the ndim _assert, v_shape, `if self.v is not None`, the training batch
variance with the n/(n-1) correction and running_var.copy_, eval's running_var,
instance_std, left.max(right) and the affine tail.
Simplified: instance_std inlined from the same file; 4 channels.
"""
import torch
from torch import nn

_assert = torch._assert


def instance_std(x, eps: float = 1e-5):
    std = x.float().var(dim=(2, 3), unbiased=False, keepdim=True).add(eps).sqrt().to(x.dtype)
    return std.expand(x.shape)


class EvoNorm2dB0(nn.Module):
    def __init__(self, num_features, apply_act=True, momentum=0.1, eps=1e-3):
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.v = nn.Parameter(torch.ones(num_features)) if apply_act else None
        self.register_buffer('running_var', torch.ones(num_features))

    def forward(self, x):
        _assert(x.dim() == 4, 'expected 4D input')
        x_dtype = x.dtype
        v_shape = (1, -1, 1, 1)
        if self.v is not None:
            if self.training:
                var = x.float().var(dim=(0, 2, 3), unbiased=False)
                n = x.numel() / x.shape[1]
                self.running_var.copy_(self.running_var * (1 - self.momentum) + var.detach() * self.momentum * (n / (n - 1)))
            else:
                var = self.running_var
            left = var.add(self.eps).sqrt_().to(x_dtype).view(v_shape).expand_as(x)
            v = self.v.to(x_dtype).view(v_shape)
            right = x * v + instance_std(x, self.eps)
            x = x / left.max(right)
        return x * self.weight.to(x_dtype).view(v_shape) + self.bias.to(x_dtype).view(v_shape)


norm = torch.compile(EvoNorm2dB0(4).train())


def make():
    torch.manual_seed(0)
    return EvoNorm2dB0(4).train(), [(torch.randn(2, 4, 3, 3),)]
