"""timm resample_abs_pos_embed called every forward of a dynamic_img_size ViT: early return when the grid matches, else split prefix tokens, bicubic-antialias interpolate, cat back.

Source: huggingface/pytorch-image-models@170a5b6e277c55ca5553bea60d0b34b4f219f966:timm/layers/pos_embed.py:16-58
Kept: resample_abs_pos_embed exactly (token-count early return, sqrt
old_size fallback, prefix split, float()/dtype round trip, F.interpolate
with antialias, the `not torch.jit.is_scripting() and verbose` logger
guard); the caller shape of a ViT `_pos_embed` with dynamic_img_size (NHWC
patch grid, old_size=patch_embed.grid_size, num_prefix_tokens from the
model, cls token concatenated after).
Simplified: the ViT around it is a conv patch embed, the pos-embed step and
a linear head (no blocks); embed dim 8, 2x2 patches, 4x4 stored grid.
"""
import logging
import math
from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

_logger = logging.getLogger(__name__)


def resample_abs_pos_embed(
        posemb,
        new_size: List[int],
        old_size: Optional[List[int]] = None,
        num_prefix_tokens: int = 1,
        interpolation: str = 'bicubic',
        antialias: bool = True,
        verbose: bool = False,
):
    # sort out sizes, assume square if old size not provided
    num_pos_tokens = posemb.shape[1]
    num_new_tokens = new_size[0] * new_size[1] + num_prefix_tokens
    if num_new_tokens == num_pos_tokens and new_size[0] == new_size[1]:
        return posemb

    if old_size is None:
        hw = int(math.sqrt(num_pos_tokens - num_prefix_tokens))
        old_size = hw, hw

    if num_prefix_tokens:
        posemb_prefix, posemb = posemb[:, :num_prefix_tokens], posemb[:, num_prefix_tokens:]
    else:
        posemb_prefix, posemb = None, posemb

    # do the interpolation
    embed_dim = posemb.shape[-1]
    orig_dtype = posemb.dtype
    posemb = posemb.float()  # interpolate needs float32
    posemb = posemb.reshape(1, old_size[0], old_size[1], -1).permute(0, 3, 1, 2)
    posemb = F.interpolate(posemb, size=new_size, mode=interpolation, antialias=antialias)
    posemb = posemb.permute(0, 2, 3, 1).reshape(1, -1, embed_dim)
    posemb = posemb.to(orig_dtype)

    # add back extra (class, etc) prefix tokens
    if posemb_prefix is not None:
        posemb = torch.cat([posemb_prefix, posemb], dim=1)

    if not torch.jit.is_scripting() and verbose:
        _logger.info(f'Resized position embedding: {old_size} to {new_size}.')

    return posemb


class PatchEmbed(nn.Module):
    def __init__(self, img_size=8, patch_size=2, in_chans=3, embed_dim=8):
        super().__init__()
        self.patch_size = (patch_size, patch_size)
        self.grid_size = (img_size // patch_size, img_size // patch_size)
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        x = self.proj(x)
        return x.permute(0, 2, 3, 1)  # NHWC for dynamic_img_size


class TinyViT(nn.Module):
    def __init__(self, img_size=8, embed_dim=8, num_classes=4, dynamic_img_size=True, no_embed_class=False):
        super().__init__()
        self.dynamic_img_size = dynamic_img_size
        self.no_embed_class = no_embed_class
        self.num_prefix_tokens = 1
        self.patch_embed = PatchEmbed(img_size=img_size, embed_dim=embed_dim)
        num_patches = self.patch_embed.grid_size[0] * self.patch_embed.grid_size[1]
        embed_len = num_patches if no_embed_class else num_patches + self.num_prefix_tokens
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.randn(1, embed_len, embed_dim) * .02)
        self.norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, num_classes)

    def _pos_embed(self, x):
        if self.dynamic_img_size:
            B, H, W, C = x.shape
            prev_grid_size = self.patch_embed.grid_size
            pos_embed = resample_abs_pos_embed(
                self.pos_embed,
                new_size=(H, W),
                old_size=prev_grid_size,
                num_prefix_tokens=0 if self.no_embed_class else self.num_prefix_tokens,
            )
            x = x.view(B, -1, C)
        else:
            pos_embed = self.pos_embed

        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = x + pos_embed
        return x

    def forward(self, x):
        x = self.patch_embed(x)
        x = self._pos_embed(x)
        x = self.norm(x)
        return self.head(x[:, 0])


model = torch.compile(TinyViT().eval())


def make():
    torch.manual_seed(0)
    return TinyViT().eval(), [(torch.randn(2, 3, 8, 8),), (torch.randn(2, 3, 8, 12),)]
