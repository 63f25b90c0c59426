"""timm NaFlexEmbeds (linear patch embed): standard 2D mode adds a learned pos embed in place; NaFlex mode calls `_apply_learned_naflex_pos_embed`, decorated `@disable_compiler` (torch.compiler.disable), which reads grid sizes with .item().

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/models/naflexvit.py:160-212,339-986; timm/layers/typing.py:34
Kept: batch_patchify, calculate_naflex_grid_sizes, the NaFlexEmbeds attributes
(pos_embed_type, pos_embed_use_grid_sample, is_linear, ...), forward's linear
branch with `_assert`s, `if self.pos_embed_type == 'learned'` dispatch on
grid_size / pos_embed_use_grid_sample, _apply_learned_pos_embed,
_apply_learned_naflex_pos_embed (decorated with disable_compiler, the
size_to_indices grouping, _interp2d, index_add_) and the class-token cat.
The compile call follows timm train.py (`torch.compile(model, backend=args.torchcompile,
mode=args.torchcompile_mode)`).
Simplified: only the linear projection and learned pos embed; factorized pos
embed, patch interpolator and input norm are dropped; sizes shrunk (patch 2,
dim 8, grid 4x4).
"""
import math
from typing import Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn


def nullwrap(fn):
    return fn


disable_compiler = getattr(getattr(torch, "compiler", None), "disable", None) or nullwrap


def _assert(condition: bool, message: str):
    assert condition, message


def to_2tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x, x)


def batch_patchify(x, patch_size, pad=True, channels_last=True):
    B, C, H, W = x.shape
    ph, pw = patch_size

    # Ensure the image is divisible by patch size
    if pad and (H % ph != 0 or W % pw != 0):
        pad_h = (ph - H % ph) % ph
        pad_w = (pw - W % pw) % pw
        x = F.pad(x, (0, pad_w, 0, pad_h))
        _, _, H, W = x.shape

    nh, nw = H // ph, W // pw
    if channels_last:
        patches = x.view(B, C, nh, ph, nw, pw).permute(0, 2, 4, 3, 5, 1)  # (B, nh, nw, ph, pw, C)
    else:
        patches = x.view(B, C, nh, ph, nw, pw).permute(0, 2, 4, 1, 3, 5)  # (B, nh, nw, C, ph, pw)
    # [B, nh, nw, ...] -> [B, nh * nw, ph * pw * C]
    patches = patches.reshape(B, nh * nw, ph * pw * C)

    return patches, (nh, nw)


def calculate_naflex_grid_sizes(_coord: torch.Tensor):
    # Calculate the appropriate grid size from coords
    max_y = _coord[:, :, 0].amax(dim=1) + 1
    max_x = _coord[:, :, 1].amax(dim=1) + 1
    return [(int(h.item()), int(w.item())) for h, w in zip(max_y, max_x)]


class NaFlexEmbeds(nn.Module):
    def __init__(
            self,
            patch_size=2,
            in_chans=3,
            embed_dim=8,
            class_token=True,
            dynamic_img_pad=False,
            pos_embed='learned',
            pos_embed_grid_size=(4, 4),
            pos_embed_interp_mode='bicubic',
            pos_embed_ar_preserving=False,
            pos_embed_use_grid_sample=False,
            channels_last=True,
    ):
        super().__init__()
        self.has_class_token = class_token
        self.pos_embed_interp_mode = pos_embed_interp_mode
        self.pos_embed_ar_preserving = pos_embed_ar_preserving
        self.pos_embed_use_grid_sample = pos_embed_use_grid_sample
        self.patch_size = to_2tuple(patch_size)
        self.in_chans = in_chans
        self.embed_dim = embed_dim
        self.dynamic_img_pad = dynamic_img_pad
        self.enable_patch_interpolator = False
        self.channels_last = channels_last
        self.num_prefix_tokens = 1 if class_token else 0
        self.cls_token = nn.Parameter(torch.randn(1, 1, embed_dim) * .02) if class_token else None
        self.reg_token = None
        self.pos_embed_grid_size = pos_embed_grid_size

        patch_dim = self.patch_size[0] * self.patch_size[1] * in_chans
        self.proj = nn.Linear(patch_dim, embed_dim)
        self.norm_input = None
        self.flatten = False
        self.is_linear = True
        self.norm = nn.Identity()

        self.pos_embed: Optional[torch.Tensor] = None
        if not pos_embed or pos_embed == 'none':
            self.pos_embed_type = 'none'
        else:
            h, w = self.pos_embed_grid_size
            self.pos_embed = nn.Parameter(torch.randn(1, h, w, embed_dim) * .02)
            self.pos_embed_type = 'learned'
        self.pos_drop = nn.Dropout(p=0.)

    @disable_compiler
    def _apply_learned_naflex_pos_embed(
            self,
            x: torch.Tensor,
            patch_coord: torch.Tensor,
    ) -> None:
        # Calculate grid sizes from patch coordinates
        naflex_grid_sizes = calculate_naflex_grid_sizes(patch_coord)
        orig_h, orig_w = self.pos_embed.shape[1:3]
        pos_embed_nchw = self.pos_embed.permute(0, 3, 1, 2).float()  # B,C,H,W

        def _interp2d(size):
            if (size[0] == orig_h) and (size[1] == orig_w):
                pos_embed_flat = self.pos_embed.reshape(1, orig_h * orig_w, -1)
            else:
                _interp_size = to_2tuple(max(size)) if self.pos_embed_ar_preserving else size
                pos_embed_flat = F.interpolate(
                    pos_embed_nchw,
                    size=_interp_size,
                    mode=self.pos_embed_interp_mode,
                    align_corners=False,
                    antialias=True,
                )[:, :, :size[0], :size[1]].flatten(2).transpose(1, 2)
            return pos_embed_flat.to(dtype=x.dtype)

        # Determine unique grid sizes to avoid duplicate interpolation
        size_to_indices: Dict[Tuple[int, int], List[int]] = {}
        for bi, k in enumerate(naflex_grid_sizes):
            size_to_indices.setdefault(k, []).append(bi)

        for k, batch_indices in size_to_indices.items():
            # Interpolate only once for this (h, w)
            pos_embed_flat = _interp2d(k)
            seq_len = min(x.shape[1], pos_embed_flat.shape[1])
            x[:, :seq_len].index_add_(
                0,
                torch.as_tensor(batch_indices, device=x.device),
                pos_embed_flat[:, :seq_len].expand(len(batch_indices), -1, -1)
            )

    def _apply_learned_pos_embed(
            self,
            x: torch.Tensor,
            grid_size: List[int],
    ) -> None:
        orig_h, orig_w = self.pos_embed.shape[1:3]
        if grid_size[0] == orig_h and grid_size[1] == orig_w:
            # No resize needed, just flatten
            pos_embed_flat = self.pos_embed.reshape(1, orig_h * orig_w, -1)
        else:
            # Resize if needed - directly using F.interpolate
            if self.pos_embed_ar_preserving:
                L = max(grid_size)
                _interp_size = L, L
            else:
                _interp_size = grid_size
            pos_embed_flat = F.interpolate(
                self.pos_embed.permute(0, 3, 1, 2).float(),  # B,C,H,W
                size=_interp_size,
                mode=self.pos_embed_interp_mode,
                align_corners=False,
                antialias=True,
            )[:, :, :grid_size[0], :grid_size[1]].flatten(2).transpose(1, 2)
        pos_embed_flat = pos_embed_flat.to(dtype=x.dtype)

        x.add_(pos_embed_flat)

    def forward(
            self,
            x: torch.Tensor,
            patch_coord: Optional[torch.Tensor] = None,
            patch_valid: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, Optional[Tuple[int, int]]]:
        grid_size: Optional[Tuple[int, int]] = None
        B = x.shape[0]
        if self.is_linear:
            # Linear embedding path, works with NaFlex mode or standard 2D mode
            if patch_coord is None:
                # Standard 2D (B, C, H, W) mode
                _assert(x.ndim == 4, 'Expecting 2D image input with input ndim == 4')
                x, grid_size = batch_patchify(
                    x, self.patch_size, pad=self.dynamic_img_pad, channels_last=self.channels_last)
            else:
                _assert(x.ndim == 5 or x.ndim == 3, 'Expecting patchified input with ndim == 3 or 5.')

            # Standard projection
            x = x.flatten(2)  # ensure [B, N, P*P*C], flatten Ph*Pw*C if separate
            if self.norm_input is not None:
                x = self.norm_input(x)
            x = self.proj(x)

        # Apply normalization after flattening
        x = self.norm(x)

        if self.pos_embed_type == 'learned':
            if grid_size is not None:
                # Standard 2D mode
                self._apply_learned_pos_embed(x, grid_size=grid_size)
            else:
                # NaFlex mode
                self._apply_learned_naflex_pos_embed(x, patch_coord=patch_coord)

        # Prepare and add class and register tokens
        to_cat = []
        if self.cls_token is not None:
            to_cat.append(self.cls_token.expand(B, -1, -1))
        if self.reg_token is not None:
            to_cat.append(self.reg_token.expand(B, -1, -1))
        # Add tokens to the beginning
        if to_cat:
            x = torch.cat(to_cat + [x], dim=1)

        # Apply dropout
        x = self.pos_drop(x)

        return x, grid_size


def main(args):
    model = NaFlexEmbeds()
    if args.torchcompile:
        # torch compile should be done after DDP
        model = torch.compile(model, backend=args.torchcompile, mode=args.torchcompile_mode)
    return model


def make():
    torch.manual_seed(0)
    m = NaFlexEmbeds()
    img = torch.randn(2, 3, 8, 8)
    img_small = torch.randn(1, 3, 6, 4)
    ys, xs = torch.meshgrid(torch.arange(3), torch.arange(2), indexing="ij")
    coord_a = torch.stack([ys.flatten(), xs.flatten()], -1)
    coord_b = torch.stack([torch.zeros(6, dtype=torch.long), torch.arange(6) % 4], -1)
    coord = torch.stack([coord_a, coord_b])
    patches = torch.randn(2, 6, 12)
    return m, [(img,), (img_small,), (patches, coord)]
