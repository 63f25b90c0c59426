"""timm PatchDropout in a ViT trunk: training keeps `int(L * (1 - prob))` random patches via argsort of randn and gather (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/patch_dropout.py:7-80
Kept: patch_dropout_forward verbatim (early return when not training, prefix
tokens split, num_keep from a Python float, argsort/gather, optional sort) and
the PatchDropout module; VisionTransformer's _pos_embed + patch_drop + norm order.
Simplified: patch embedding is a linear over flattened patches; dim 8.
"""
from typing import Optional, Tuple

import torch
import torch.nn as nn


def patch_dropout_forward(
        x: torch.Tensor,
        prob: float,
        num_prefix_tokens: int,
        ordered: bool,
        training: bool,
) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    if not training or prob == 0.:
        return x, None

    if num_prefix_tokens:
        prefix_tokens, x = x[:, :num_prefix_tokens], x[:, num_prefix_tokens:]
    else:
        prefix_tokens = None

    B = x.shape[0]
    L = x.shape[1]
    num_keep = max(1, int(L * (1. - prob)))
    keep_indices = torch.argsort(torch.randn(B, L, device=x.device), dim=-1)[:, :num_keep]

    if ordered:
        keep_indices = keep_indices.sort(dim=-1)[0]

    x = x.gather(1, keep_indices.unsqueeze(-1).expand((-1, -1) + x.shape[2:]))

    if prefix_tokens is not None:
        x = torch.cat((prefix_tokens, x), dim=1)

    return x, keep_indices


class PatchDropout(nn.Module):
    def __init__(self, prob: float = 0.5, num_prefix_tokens: int = 1, ordered: bool = False):
        super().__init__()
        assert 0 <= prob < 1.
        self.prob = prob
        self.num_prefix_tokens = num_prefix_tokens
        self.ordered = ordered

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output, _ = patch_dropout_forward(x, self.prob, self.num_prefix_tokens, self.ordered, self.training)
        return output


class TinyViT(nn.Module):
    def __init__(self, num_patches=9, dim=8, patch_drop_rate=0.5):
        super().__init__()
        self.patch_embed = nn.Linear(12, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, num_patches + 1, dim) * .02)
        self.num_prefix_tokens = 1
        if patch_drop_rate > 0:
            self.patch_drop = PatchDropout(patch_drop_rate, num_prefix_tokens=self.num_prefix_tokens, ordered=True)
        else:
            self.patch_drop = nn.Identity()
        self.norm_pre = nn.LayerNorm(dim)

    def _pos_embed(self, x):
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        return x + self.pos_embed

    def forward(self, patches):
        x = self.patch_embed(patches)
        x = self._pos_embed(x)
        x = self.patch_drop(x)
        return self.norm_pre(x)


model = torch.compile(TinyViT().eval(), dynamic=False)


def make():
    torch.manual_seed(0)
    return TinyViT().eval(), [(torch.randn(2, 9, 12),)]
