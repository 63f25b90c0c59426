"""timm build_sincos2d_pos_embed computed per forward from the feature map shape (dynamic image size models): freq bands, ndgrid, stacked sin/cos (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/pos_embed_sincos.py:28-77; timm/layers/grid.py:ndgrid
Kept: freq_bands and build_sincos2d_pos_embed verbatim (the dim % 4 assert,
reverse_coord, the list-comprehension grid over feat_shape, interleave switch,
dtype cast) and ndgrid; a model adds it to patch tokens each call.
Simplified: dim 8; conv patch embed with patch 2.
"""
from typing import List, Optional

import torch
from torch import nn


def ndgrid(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    return torch.meshgrid(*tensors, indexing="ij")


def freq_bands(num_bands: int, temperature: float=10000.0, step: int=2, device: Optional[torch.device]=None) -> torch.Tensor:
    exp = torch.arange(0, num_bands, step, dtype=torch.int64, device=device).to(torch.float32) / num_bands
    bands = 1.0 / temperature ** exp
    return bands


def build_sincos2d_pos_embed(feat_shape: List[int], dim: int=64, temperature: float=10000.0, reverse_coord: bool=False, interleave_sin_cos: bool=False, device: Optional[torch.device]=None, dtype: torch.dtype=torch.float32) -> torch.Tensor:
    assert dim % 4 == 0, 'Embed dimension must be divisible by 4 for sin-cos 2D position embedding'
    pos_dim = dim // 4
    bands = freq_bands(pos_dim, temperature=temperature, step=1, device=device)
    if reverse_coord:
        feat_shape = feat_shape[::-1]
    grid = torch.stack(ndgrid([torch.arange(s, device=device, dtype=torch.int64).to(torch.float32) for s in feat_shape])).flatten(1).transpose(0, 1)
    pos2 = grid.unsqueeze(-1) * bands.unsqueeze(0)
    stack_dim = 2 if interleave_sin_cos else 1
    pos_emb = torch.stack([torch.sin(pos2), torch.cos(pos2)], dim=stack_dim).flatten(1)
    return pos_emb.to(dtype=dtype)



class DynamicPosEmbedStem(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.dim = dim
        self.proj = nn.Conv2d(3, dim, 2, 2)

    def forward(self, x):
        x = self.proj(x)
        feat_shape = list(x.shape[-2:])
        pos = build_sincos2d_pos_embed(feat_shape, dim=self.dim, device=x.device, dtype=x.dtype)
        return x.flatten(2).transpose(1, 2) + pos


stem = torch.compile(DynamicPosEmbedStem(), dynamic=True)


def make():
    torch.manual_seed(0)
    return DynamicPosEmbedStem(), [(torch.randn(1, 3, 4, 6),), (torch.randn(1, 3, 8, 8),)]
