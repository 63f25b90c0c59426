"""timm AttentionPoolLatent (SigLIP/ViT MAP head): latent queries, fused or explicit attention with maybe_add_mask, pool type strings (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/attention_pool.py:102-137; timm/layers/attention.py:15-18; timm/models/vision_transformer.py:1255-1277
Kept: forward (optional pos_embed, latent expand, q/kv projections and
reshape, q/k norms, fused SDPA vs explicit with maybe_add_mask, proj, the
optional mlp residual, 'token'/'avg' pooling), maybe_add_mask with timm's
@torch.fx.wrap decorator, and VisionTransformer.pool's attn_pool switch with
pool_include_prefix.
Simplified: register_notrace_function is an identity decorator; dim 8, 2 heads, 1 latent.
"""
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


def register_notrace_function(fn):
    return fn


@torch.fx.wrap
@register_notrace_function
def maybe_add_mask(scores: torch.Tensor, attn_mask: Optional[torch.Tensor] = None):
    return scores if attn_mask is None else scores + attn_mask


class AttentionPoolLatent(nn.Module):
    def __init__(self, in_features=8, num_heads=2, latent_len=1, pool_type='token', fused_attn=True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = in_features // num_heads
        self.scale = self.head_dim ** -0.5
        self.pool = pool_type
        self.fused_attn = fused_attn
        self.pos_embed = None
        self.latent_len = latent_len
        self.latent = nn.Parameter(torch.randn(1, latent_len, in_features) * 0.02)
        self.q = nn.Linear(in_features, in_features)
        self.kv = nn.Linear(in_features, in_features * 2)
        self.q_norm = nn.Identity()
        self.k_norm = nn.Identity()
        self.proj = nn.Linear(in_features, in_features)
        self.proj_drop = nn.Dropout(0.0)
        self.norm = nn.LayerNorm(in_features)
        self.mlp = nn.Sequential(nn.Linear(in_features, 16), nn.GELU(), nn.Linear(16, in_features))

    def forward(self, x, attn_mask: Optional[torch.Tensor] = None):
        B, N, C = x.shape
        if self.pos_embed is not None:
            x = x + self.pos_embed.unsqueeze(0).to(x.dtype)
        q_latent = self.latent.expand(B, -1, -1)
        q = self.q(q_latent).reshape(B, self.latent_len, self.num_heads, self.head_dim).transpose(1, 2)
        kv = self.kv(x).reshape(B, N, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        k, v = kv.unbind(0)
        q, k = self.q_norm(q), self.k_norm(k)
        if self.fused_attn:
            x = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        else:
            q = q * self.scale
            attn = q @ k.transpose(-2, -1)
            attn = maybe_add_mask(attn, attn_mask)
            attn = attn.softmax(dim=-1)
            x = attn @ v
        x = x.transpose(1, 2).reshape(B, self.latent_len, C)
        x = self.proj(x)
        x = self.proj_drop(x)
        if self.mlp is not None:
            x = x + self.mlp(self.norm(x))
        if self.pool == 'token':
            x = x[:, 0]
        elif self.pool == 'avg':
            x = x.mean(1)
        return x


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn_pool = AttentionPoolLatent(fused_attn=False)
        self.pool_include_prefix = False
        self.num_prefix_tokens = 1

    def pool(self, x, pool_type=None):
        if self.attn_pool is not None:
            if not self.pool_include_prefix:
                x = x[:, self.num_prefix_tokens:]
            x = self.attn_pool(x)
            return x
        return x.mean(1)

    def forward(self, x):
        return self.pool(x)


head = torch.compile(Head())


def make():
    torch.manual_seed(0)
    return Head(), [(torch.randn(2, 5, 8),)]
