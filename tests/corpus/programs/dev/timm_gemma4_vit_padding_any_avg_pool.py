"""timm Gemma4 ViT encoder: `if padding_positions.any():` builds an additive mask in `_encode`, and again picks the masked mean for global_pool='avg'.

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/models/gemma4_vit.py:804-901
Kept: _assert_raw_img_conformant (shape-only), _encode with its padding any()
mask, block_callback / max_block_index plumbing and grad_checkpointing branch,
and forward's global_pool 'soft'/'avg'/'none' dispatch with the masked mean.
Simplified: the NaFlex patch embed is a linear over pre-patchified tokens that
derives position_ids from patch_coord and padding from patch_valid; no RoPE
(blocks take the mask only); no soft pooler (config uses 'avg'); 2 blocks, dim 8.
"""
from typing import Callable, Optional

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, attn_mask=None):
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        attn = nn.functional.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None], attn_mask=attn_mask)
        return x + self.proj(attn[:, 0])


class PatchEmbed(nn.Module):
    def __init__(self, in_dim, dim):
        super().__init__()
        self.proj = nn.Linear(in_dim, dim)

    def forward(self, x, patch_coord, patch_valid):
        x = self.proj(x)
        position_ids = patch_coord.flip(-1)  # (y, x) -> (x, y)
        padding_positions = ~patch_valid
        return x, position_ids, padding_positions


class Gemma4VitEncoder(nn.Module):
    def __init__(self, in_dim=12, embed_dim=8, depth=2, global_pool='avg'):
        super().__init__()
        self.global_pool = global_pool
        self.patch_size = (2, 2)
        self.pooling_kernel_size = 2
        self.grad_checkpointing = False
        self.patch_embed = PatchEmbed(in_dim, embed_dim)
        self.blocks = nn.ModuleList([Block(embed_dim) for _ in range(depth)])

    def _assert_raw_img_conformant(self, x):
        if x.ndim != 4 or self.global_pool != 'soft':
            return
        H, W = x.shape[-2:]
        ph, pw = self.patch_size
        k = self.pooling_kernel_size
        cell_h, cell_w = ph * k, pw * k
        if H % cell_h != 0 or W % cell_w != 0:
            raise ValueError(
                f"Image size ({H}, {W}) must be divisible by "
                f"(patch_size * pooling_kernel_size) = ({cell_h}, {cell_w}) when global_pool='soft'."
            )

    def _encode(
            self,
            x: torch.Tensor,
            position_ids: torch.Tensor,
            padding_positions: torch.Tensor,
            block_callback: Optional[Callable[[int, torch.Tensor], None]] = None,
            max_block_index: Optional[int] = None,
    ) -> torch.Tensor:
        B, N = x.shape[:2]

        attn_mask: Optional[torch.Tensor] = None
        if padding_positions.any():
            attn_mask = torch.zeros(B, 1, 1, N, device=x.device, dtype=x.dtype)
            attn_mask.masked_fill_(padding_positions[:, None, None, :], float('-inf'))

        if max_block_index is None:
            blocks = self.blocks
        else:
            blocks = self.blocks[:max_block_index + 1]

        for i, blk in enumerate(blocks):
            if self.grad_checkpointing and not torch.jit.is_scripting():
                x = torch.utils.checkpoint.checkpoint(blk, x, attn_mask, use_reentrant=False)
            else:
                x = blk(x, attn_mask=attn_mask)
            if block_callback is not None:
                block_callback(i, x)
        return x

    def forward(self, x, patch_coord=None, patch_valid=None):
        self._assert_raw_img_conformant(x if not isinstance(x, dict) else x['patches'])
        x, position_ids, padding_positions = self.patch_embed(x, patch_coord, patch_valid)
        x = self._encode(x, position_ids, padding_positions)

        if self.global_pool == 'soft':
            raise NotImplementedError
        elif self.global_pool == 'avg':
            if padding_positions.any():
                x = x.masked_fill(padding_positions.unsqueeze(-1), 0.0)
                x = x.sum(dim=1) / (~padding_positions).sum(dim=1, keepdim=True).clamp(min=1)
            else:
                x = x.mean(dim=1)
        return x


def make():
    torch.manual_seed(0)
    coord = torch.stack(torch.meshgrid(torch.arange(2), torch.arange(3), indexing='ij'), -1).reshape(1, 6, 2).repeat(2, 1, 1)
    full = torch.ones(2, 6, dtype=torch.bool)
    padded = full.clone()
    padded[1, 4:] = False
    x = torch.randn(2, 6, 12)
    return Gemma4VitEncoder(), [(x, coord, full), (x, coord, padded)]


encoder = torch.compile(Gemma4VitEncoder(), fullgraph=False)
