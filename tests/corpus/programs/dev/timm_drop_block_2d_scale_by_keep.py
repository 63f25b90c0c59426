"""timm drop_block_2d / DropBlock2d: gamma from shape ints, no_grad max-pooled mask, even-kernel crop, keep-scale normalisation (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/drop.py:24-155
Kept: drop_block_2d and DropBlock2d verbatim (the eval / zero-prob early return,
with_noise / scale_by_keep / inplace / couple_channels switches, the
`numel() / sum()` normalisation under no_grad) inside a ResNet-style block.
Simplified: 4 channels, block 3, drop 0.2.
"""
import torch
import torch.nn.functional as F
from torch import nn


def drop_block_2d(x: torch.Tensor, drop_prob: float=0.1, block_size: int=7, gamma_scale: float=1.0, with_noise: bool=False, inplace: bool=False, couple_channels: bool=True, scale_by_keep: bool=True):
    B, C, H, W = x.shape
    kh, kw = (min(block_size, H), min(block_size, W))
    gamma = float(gamma_scale * drop_prob * H * W) / float(kh * kw) / float((H - kh + 1) * (W - kw + 1))
    noise_shape = (B, 1 if couple_channels else C, H, W)
    with torch.no_grad():
        block_mask = torch.empty(noise_shape, dtype=x.dtype, device=x.device).bernoulli_(gamma)
        block_mask = F.max_pool2d(block_mask, kernel_size=(kh, kw), stride=1, padding=(kh // 2, kw // 2))
        if kh % 2 == 0 or kw % 2 == 0:
            block_mask = block_mask[..., (kh + 1) % 2:, (kw + 1) % 2:]
        keep_mask = 1.0 - block_mask
    if with_noise:
        with torch.no_grad():
            noise = torch.empty_like(keep_mask).normal_()
            noise.mul_(block_mask)
        if inplace:
            x.mul_(keep_mask).add_(noise)
        else:
            x = x * keep_mask + noise
    else:
        if scale_by_keep:
            with torch.no_grad():
                normalize_scale = keep_mask.numel() / keep_mask.to(dtype=torch.float32).sum().add(1e-07)
                keep_mask.mul_(normalize_scale.to(x.dtype))
        if inplace:
            x.mul_(keep_mask)
        else:
            x = x * keep_mask
    return x


class DropBlock2d(nn.Module):

    def __init__(self, drop_prob: float=0.1, block_size: int=7, gamma_scale: float=1.0, with_noise: bool=False, inplace: bool=False, couple_channels: bool=True, scale_by_keep: bool=True, **kwargs):
        super().__init__()
        self.drop_prob = drop_prob
        self.gamma_scale = gamma_scale
        self.block_size = block_size
        self.with_noise = with_noise
        self.inplace = inplace
        self.couple_channels = couple_channels
        self.scale_by_keep = scale_by_keep
        deprecated_args = {'batchwise', 'fast'}
        for k in kwargs:
            if k not in deprecated_args:
                import warnings
                warnings.warn(f"DropBlock2d() got unexpected keyword argument '{k}'")

    def forward(self, x):
        if not self.training or not self.drop_prob:
            return x
        return drop_block_2d(x, drop_prob=self.drop_prob, block_size=self.block_size, gamma_scale=self.gamma_scale, with_noise=self.with_noise, inplace=self.inplace, couple_channels=self.couple_channels, scale_by_keep=self.scale_by_keep)



class BasicBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.drop_block = DropBlock2d(drop_prob=0.2, block_size=3)

    def forward(self, x):
        return x + self.drop_block(self.conv(x))


block = torch.compile(BasicBlock().train())


def make():
    torch.manual_seed(0)
    return BasicBlock().train(), [(torch.randn(2, 4, 6, 6),)]
