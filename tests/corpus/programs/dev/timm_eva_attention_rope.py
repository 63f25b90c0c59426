"""timm EvaAttention: optional gate, fused or separate q/k/v, getattr(rotate_half) rope on non-prefix tokens, fused SDPA (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/models/eva.py:199-267; timm/layers/pos_embed_sincos.py:apply_rot_embed_cat
Kept: the gate switch, qkv fused path with q/k/v bias cat, the separate
projection path, q/k norms, the `rope is not None` branch with
num_prefix_tokens and getattr(self, 'rotate_half', False), fused SDPA vs the
explicit path, norm/gate/proj.
Simplified: apply_rot_embed_cat inlined (rotate-half form); 1 prefix token,
2 heads of 2; no attention mask helper.
"""
import torch
import torch.nn.functional as F
from torch import nn


def rot(x):
    return torch.stack([-x[..., 1::2], x[..., ::2]], -1).reshape(x.shape)


def apply_rot_embed_cat(x, emb, half=False):
    sin_emb, cos_emb = emb.tensor_split(2, -1)
    return x * cos_emb + rot(x) * sin_emb


class EvaAttention(nn.Module):
    def __init__(self, dim=4, num_heads=2, qkv_fused=True, gate=False, fused_attn=True):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.num_prefix_tokens = 1
        self.fused_attn = fused_attn
        self.gate = nn.Linear(dim, dim) if gate else None
        if qkv_fused:
            self.qkv = nn.Linear(dim, dim * 3, bias=False)
            self.q_bias = nn.Parameter(torch.zeros(dim))
            self.register_buffer('k_bias', torch.zeros(dim), persistent=False)
            self.v_bias = nn.Parameter(torch.zeros(dim))
            self.qkv_bias_separate = False
        else:
            self.qkv = None
            self.q_proj, self.k_proj, self.v_proj = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
            self.q_bias = None
        self.q_norm = nn.Identity()
        self.k_norm = nn.Identity()
        self.attn_drop = nn.Dropout(0.0)
        self.norm = nn.Identity()
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(0.0)

    def forward(self, x, rope=None, attn_mask=None, is_causal: bool = False):
        B, N, C = x.shape
        gate = self.gate(x).sigmoid() if self.gate is not None else None
        if self.qkv is not None:
            if self.q_bias is None:
                qkv = self.qkv(x)
            else:
                qkv_bias = torch.cat((self.q_bias, self.k_bias, self.v_bias))
                if self.qkv_bias_separate:
                    qkv = self.qkv(x)
                    qkv += qkv_bias
                else:
                    qkv = F.linear(x, weight=self.qkv.weight, bias=qkv_bias)
            qkv = qkv.reshape(B, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
        else:
            q = self.q_proj(x).reshape(B, N, self.num_heads, -1).transpose(1, 2)
            k = self.k_proj(x).reshape(B, N, self.num_heads, -1).transpose(1, 2)
            v = self.v_proj(x).reshape(B, N, self.num_heads, -1).transpose(1, 2)
        q, k = self.q_norm(q), self.k_norm(k)
        if rope is not None:
            npt = self.num_prefix_tokens
            half = getattr(self, 'rotate_half', False)
            q = torch.cat([q[:, :, :npt, :], apply_rot_embed_cat(q[:, :, npt:, :], rope, half=half)], dim=2).type_as(v)
            k = torch.cat([k[:, :, :npt, :], apply_rot_embed_cat(k[:, :, npt:, :], rope, half=half)], dim=2).type_as(v)
        if self.fused_attn:
            x = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=self.attn_drop.p if self.training else 0., is_causal=is_causal)
        else:
            q = q * self.scale
            attn = q @ k.transpose(-2, -1)
            if attn_mask is not None:
                attn = attn + attn_mask
            attn = attn.softmax(dim=-1)
            attn = self.attn_drop(attn)
            x = attn @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        x = self.norm(x)
        if gate is not None:
            x = x * gate
        x = self.proj(x)
        return self.proj_drop(x)


class Pair(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = EvaAttention()
        self.b = EvaAttention(qkv_fused=False, gate=True, fused_attn=False)

    def forward(self, x, rope=None):
        return self.a(x, rope=rope) + self.b(x, rope=rope)


model = torch.compile(Pair().eval())


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 5, 4)
    return Pair().eval(), [(x,), (x, torch.randn(4, 4))]
