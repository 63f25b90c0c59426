"""timm LeViT attention in eval: `get_attention_biases` fills a per-device dict cache keyed by str(device).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/models/levit.py:295-327
Kept: the tracing/training bypass, `device_key = str(device)`, the
`not in` check and dict store on `self.attention_bias_cache`, both the conv
and the linear forward paths.
Simplified: bias idxs computed with a small resolution; key_dim 4, 2 heads.
"""
import itertools

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=8, key_dim=4, num_heads=2, attn_ratio=1.0, resolution=2, use_conv=False):
        super().__init__()
        self.use_conv = use_conv
        self.num_heads = num_heads
        self.scale = key_dim ** -0.5
        self.key_dim = key_dim
        self.val_dim = int(attn_ratio * key_dim)
        self.val_attn_dim = self.val_dim * num_heads
        h = self.key_dim * 2 * num_heads + self.val_attn_dim
        self.qkv = nn.Linear(dim, h)
        self.proj = nn.Linear(self.val_attn_dim, dim)
        self.resolution = (resolution, resolution)
        pos = torch.stack(torch.meshgrid(torch.arange(resolution), torch.arange(resolution), indexing="ij")).flatten(1)
        rel_pos = (pos[..., :, None] - pos[..., None, :]).abs()
        rel_pos = (rel_pos[0] * resolution) + rel_pos[1]
        self.attention_biases = nn.Parameter(torch.randn(num_heads, resolution * resolution))
        self.register_buffer("attention_bias_idxs", rel_pos, persistent=False)
        self.attention_bias_cache = {}

    @torch.no_grad()
    def train(self, mode=True):
        super().train(mode)
        if mode and self.attention_bias_cache:
            self.attention_bias_cache = {}

    def get_attention_biases(self, device: torch.device) -> torch.Tensor:
        if torch.jit.is_tracing() or self.training:
            return self.attention_biases[:, self.attention_bias_idxs]
        else:
            device_key = str(device)
            if device_key not in self.attention_bias_cache:
                self.attention_bias_cache[device_key] = self.attention_biases[:, self.attention_bias_idxs]
            return self.attention_bias_cache[device_key]

    def forward(self, x):
        B, N, C = x.shape
        q, k, v = self.qkv(x).view(B, N, self.num_heads, -1).split([self.key_dim, self.key_dim, self.val_dim], dim=3)
        q = q.permute(0, 2, 1, 3)
        k = k.permute(0, 2, 3, 1)
        v = v.permute(0, 2, 1, 3)
        attn = q @ k * self.scale + self.get_attention_biases(x.device)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, self.val_attn_dim)
        return self.proj(x)


model = Attention()
model.eval()  # timm's train() override returns None, so .eval() is not chained
model = torch.compile(model)


def make():
    torch.manual_seed(0)
    model = Attention()
    model.eval()
    return model, [(torch.randn(2, 4, 8),)]
