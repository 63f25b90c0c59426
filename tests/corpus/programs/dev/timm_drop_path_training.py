"""timm DropPath in a ViT block: `if drop_prob == 0. or not training: return x`, bernoulli_ noise (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/drop.py:158-187
Kept: drop_path with keep_prob / scale_by_keep and the DropPath module reading
self.training; a pre-norm residual block applying it twice as timm's Block does.
Simplified: attention is a linear layer; dim 8.
"""
import torch
from torch import nn


def drop_path(x, drop_prob: float = 0., training: bool = False, scale_by_keep: bool = True):
    if drop_prob == 0. or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    if keep_prob > 0.0 and scale_by_keep:
        random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    def __init__(self, drop_prob: float = 0., scale_by_keep: bool = True):
        super().__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)


class Block(nn.Module):
    def __init__(self, dim=8, drop_path=0.1):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.Linear(dim, dim)
        self.drop_path1 = DropPath(drop_path) if drop_path > 0. else nn.Identity()
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.drop_path2 = DropPath(drop_path) if drop_path > 0. else nn.Identity()

    def forward(self, x):
        x = x + self.drop_path1(self.attn(self.norm1(x)))
        x = x + self.drop_path2(self.mlp(self.norm2(x)))
        return x


def train_one_epoch(model, batches):
    model.train()
    model = torch.compile(model)
    return [model(b).sum() for b in batches]


def make():
    torch.manual_seed(0)
    return Block().train(), [(torch.randn(2, 3, 8),)]
