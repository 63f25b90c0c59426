"""timm EfficientFormer attention in eval: per-device dict cache of gathered attention biases (training bypasses it).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/models/efficientformer.py:52-116
Kept: the constructor's rel_pos index buffer and attention_biases parameter,
the train() override that clears the cache, get_attention_biases (tracing or
training bypass; str(device) key; `not in` check; dict store) and forward.
Simplified: resolution 2, 2 heads, key_dim 2, attn_ratio 2.
"""
import torch
from torch import nn


class Attention(nn.Module):
    attention_bias_cache: dict

    def __init__(self, dim=4, key_dim=2, num_heads=2, attn_ratio=2, resolution=2):
        super().__init__()
        self.num_heads = num_heads
        self.scale = key_dim ** -0.5
        self.key_dim = key_dim
        self.key_attn_dim = key_dim * num_heads
        self.val_dim = int(attn_ratio * key_dim)
        self.val_attn_dim = self.val_dim * num_heads
        self.qkv = nn.Linear(dim, self.key_attn_dim * 2 + self.val_attn_dim)
        self.proj = nn.Linear(self.val_attn_dim, dim)
        pos = torch.stack(torch.meshgrid(torch.arange(resolution), torch.arange(resolution), indexing="ij")).flatten(1)
        rel_pos = (pos[..., :, None] - pos[..., None, :]).abs()
        rel_pos = (rel_pos[0] * resolution) + rel_pos[1]
        self.attention_biases = torch.nn.Parameter(torch.randn(num_heads, resolution * resolution))
        self.register_buffer('attention_bias_idxs', rel_pos)
        self.attention_bias_cache = {}

    @torch.no_grad()
    def train(self, mode=True):
        super().train(mode)
        if mode and self.attention_bias_cache:
            self.attention_bias_cache = {}
        return self

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
        qkv = self.qkv(x)
        qkv = qkv.reshape(B, N, self.num_heads, -1).permute(0, 2, 1, 3)
        q, k, v = qkv.split([self.key_dim, self.key_dim, self.val_dim], dim=3)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn + self.get_attention_biases(x.device)
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(B, N, self.val_attn_dim)
        return self.proj(x)


def make():
    torch.manual_seed(0)
    return Attention().train(), [(torch.randn(2, 4, 4),)]


def train_then_eval():
    model = Attention()
    model.train()
    compiled = torch.compile(model)
    return compiled
