"""timm resample_abs_pos_embed_nhwc on a SAM-style NHWC pos embed: shape-compare early return, else float() + interpolate + permute back.

Source: huggingface/pytorch-image-models@170a5b6e277c55ca5553bea60d0b34b4f219f966:timm/layers/pos_embed.py:61-79
Kept: resample_abs_pos_embed_nhwc exactly (the `new_size[0] == posemb.shape[-3]
and new_size[1] == posemb.shape[-2]` early return, dtype round trip,
bicubic antialias interpolate, the verbose logger guard); the caller shape
of an NHWC image encoder (`x = x + resample_abs_pos_embed_nhwc(self.pos_embed,
x.shape[1:3])` when pos_embed is not None).
Simplified: the encoder is a patch conv, the pos-embed add, a LayerNorm and
a neck conv; embed dim 8, 4x4 stored grid.
"""
import logging
from typing import List

import torch
import torch.nn as nn
import torch.nn.functional as F

_logger = logging.getLogger(__name__)


def resample_abs_pos_embed_nhwc(
        posemb,
        new_size: List[int],
        interpolation: str = 'bicubic',
        antialias: bool = True,
        verbose: bool = False,
):
    if new_size[0] == posemb.shape[-3] and new_size[1] == posemb.shape[-2]:
        return posemb

    orig_dtype = posemb.dtype
    posemb = posemb.float()
    # do the interpolation
    posemb = posemb.reshape(1, posemb.shape[-3], posemb.shape[-2], posemb.shape[-1]).permute(0, 3, 1, 2)
    posemb = F.interpolate(posemb, size=new_size, mode=interpolation, antialias=antialias)
    posemb = posemb.permute(0, 2, 3, 1).to(orig_dtype)

    if not torch.jit.is_scripting() and verbose:
        _logger.info(f'Resized position embedding: {posemb.shape[-3:-1]} to {new_size}.')

    return posemb


class ImageEncoder(nn.Module):
    def __init__(self, img_size=16, patch_size=4, embed_dim=8, use_abs_pos=True):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, embed_dim, kernel_size=patch_size, stride=patch_size)
        grid_size = img_size // patch_size
        if use_abs_pos:
            self.pos_embed = nn.Parameter(torch.randn(1, grid_size, grid_size, embed_dim) * .02)
        else:
            self.pos_embed = None
        self.norm = nn.LayerNorm(embed_dim)
        self.neck = nn.Conv2d(embed_dim, 4, kernel_size=1)

    def forward(self, x):
        x = self.patch_embed(x).permute(0, 2, 3, 1)
        if self.pos_embed is not None:
            # dynamically resize abs pos embedding if needed
            x = x + resample_abs_pos_embed_nhwc(self.pos_embed, x.shape[1:3])
        x = self.norm(x)
        x = self.neck(x.permute(0, 3, 1, 2))
        return x


def create_encoder():
    return ImageEncoder().eval()


encoder = torch.compile(create_encoder())


def make():
    torch.manual_seed(0)
    return create_encoder(), [(torch.randn(1, 3, 16, 16),), (torch.randn(1, 3, 24, 20),)]
