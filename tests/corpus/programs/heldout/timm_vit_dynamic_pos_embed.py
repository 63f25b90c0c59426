"""timm ViT `_pos_embed` with dynamic_img_size: resample_abs_pos_embed per call, a verbose-only logger.info.

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/models/vision_transformer.py:1038-1075; timm/layers/pos_embed.py:19-59
Kept: _pos_embed's cls/reg token list, the dynamic branch calling
resample_abs_pos_embed (early return when sizes match, prefix split, bicubic
interpolate, `if not torch.jit.is_scripting() and verbose: _logger.info`),
no_embed_class handling and pos_drop.
Simplified: the model is patch embed + _pos_embed + mean pool; dim 8, 4x4 grid; verbose=True as
in the timm train script's --pos-embed-verbose debugging.
"""
import logging
import math

import torch
import torch.nn.functional as F
from torch import nn

_logger = logging.getLogger(__name__)


def resample_abs_pos_embed(posemb, new_size, old_size=None, num_prefix_tokens=1, interpolation='bicubic', antialias=True, verbose=False):
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
    embed_dim = posemb.shape[-1]
    orig_dtype = posemb.dtype
    posemb = posemb.float()
    posemb = posemb.reshape(1, old_size[0], old_size[1], -1).permute(0, 3, 1, 2)
    posemb = F.interpolate(posemb, size=new_size, mode=interpolation, antialias=antialias)
    posemb = posemb.permute(0, 2, 3, 1).reshape(1, -1, embed_dim)
    posemb = posemb.to(orig_dtype)
    if posemb_prefix is not None:
        posemb = torch.cat([posemb_prefix, posemb], dim=1)
    if not torch.jit.is_scripting() and verbose:
        _logger.info(f'Resized position embedding: {old_size} to {new_size}.')
    return posemb


class VisionTransformer(nn.Module):
    def __init__(self, dim=8, grid=4, verbose=True):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, 2, 2)
        self.grid_size = (grid, grid)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.reg_token = None
        self.num_prefix_tokens = 1
        self.no_embed_class = False
        self.dynamic_img_size = True
        self.pos_embed = nn.Parameter(torch.randn(1, grid * grid + 1, dim) * .02)
        self.pos_drop = nn.Dropout(0.0)
        self.verbose = verbose

    def _pos_embed(self, x):
        to_cat = []
        if self.cls_token is not None:
            to_cat.append(self.cls_token.expand(x.shape[0], -1, -1))
        if self.reg_token is not None:
            to_cat.append(self.reg_token.expand(x.shape[0], -1, -1))
        if self.pos_embed is None:
            return torch.cat(to_cat + [x.view(x.shape[0], -1, x.shape[-1])], dim=1)
        if self.dynamic_img_size:
            B, H, W, C = x.shape
            prev_grid_size = self.grid_size
            pos_embed = resample_abs_pos_embed(
                self.pos_embed, new_size=(H, W), old_size=prev_grid_size,
                num_prefix_tokens=0 if self.no_embed_class else self.num_prefix_tokens, verbose=self.verbose,
            )
            x = x.view(B, -1, C)
        else:
            pos_embed = self.pos_embed
        if self.no_embed_class:
            x = x + pos_embed
            if to_cat:
                x = torch.cat(to_cat + [x], dim=1)
        else:
            if to_cat:
                x = torch.cat(to_cat + [x], dim=1)
            x = x + pos_embed
        return self.pos_drop(x)

    def forward(self, x):
        x = self.patch_embed(x).permute(0, 2, 3, 1)
        return self._pos_embed(x).mean(1)


model = torch.compile(VisionTransformer(), dynamic=False)


def make():
    torch.manual_seed(0)
    return VisionTransformer(), [(torch.randn(1, 3, 8, 8),), (torch.randn(1, 3, 12, 8),)]
