"""timm PatchDropout: training-only random keep via argsort of randn, gather, prefix tokens re-attached (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/patch_dropout.py:7-79
Kept: patch_dropout_forward (the training/prob early return, prefix split,
num_keep from L, argsort(randn)[:, :num_keep], optional sort, gather, cat,
the (x, keep_indices) tuple) and the module that drops the indices.
Simplified: used directly after a position embedding; 9 tokens of dim 8.
"""
from typing import Optional, Tuple

import torch
from torch import nn


def patch_dropout_forward(x: torch.Tensor, prob: float, num_prefix_tokens: int, ordered: bool, training: bool) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
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

    def forward(self, x):
        output, _ = patch_dropout_forward(x, self.prob, self.num_prefix_tokens, self.ordered, self.training)
        return output


class Stem(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos_embed = nn.Parameter(torch.randn(1, 9, 8) * 0.02)
        self.patch_drop = PatchDropout(0.25, ordered=True)

    def forward(self, x):
        return self.patch_drop(x + self.pos_embed)


def make():
    torch.manual_seed(0)
    return Stem().train(), [(torch.randn(2, 9, 8),)]


stem = torch.compile(Stem().train())
