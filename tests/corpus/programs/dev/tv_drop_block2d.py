"""torchvision drop_block2d: argument checks, gamma from shapes, max_pool of the noise, renormalise (no break).

Source: pytorch/vision@v0.29.2:torchvision/ops/drop_block.py:9-55
Kept: the p / ndim checks, `if not training or p == 0.0`, block_size clamp to
the input size, gamma, the padded bernoulli noise and max_pool2d, the
`noise.numel() / (eps + noise.sum())` renormalisation.
Simplified: inplace=False only.
"""
import torch
import torch.nn.functional as F
from torch import Tensor, nn


def drop_block2d(input: Tensor, p: float, block_size: int, inplace: bool = False, eps: float = 1e-06, training: bool = True) -> Tensor:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}.")
    if input.ndim != 4:
        raise ValueError(f"input should be 4 dimensional. Got {input.ndim} dimensions.")
    if not training or p == 0.0:
        return input

    N, C, H, W = input.size()
    block_size = min(block_size, W, H)
    gamma = (p * H * W) / ((block_size**2) * ((H - block_size + 1) * (W - block_size + 1)))
    noise = torch.empty((N, C, H - block_size + 1, W - block_size + 1), dtype=input.dtype, device=input.device)
    noise.bernoulli_(gamma)
    noise = F.pad(noise, [block_size // 2] * 4, value=0)
    noise = F.max_pool2d(noise, stride=(1, 1), kernel_size=(block_size, block_size), padding=block_size // 2)
    noise = 1 - noise
    normalize_scale = noise.numel() / (eps + noise.sum())
    if inplace:
        input.mul_(noise).mul_(normalize_scale)
    else:
        input = input * noise * normalize_scale
    return input


class DropBlock2d(nn.Module):
    def __init__(self, p: float, block_size: int, inplace: bool = False, eps: float = 1e-06) -> None:
        super().__init__()
        self.p = p
        self.block_size = block_size
        self.inplace = inplace
        self.eps = eps

    def forward(self, input: Tensor) -> Tensor:
        return drop_block2d(input, self.p, self.block_size, self.inplace, self.eps, self.training)


layer = DropBlock2d(p=0.1, block_size=3)
layer.compile()


def make():
    torch.manual_seed(0)
    return DropBlock2d(p=0.1, block_size=3), [(torch.randn(2, 3, 7, 7),)]
