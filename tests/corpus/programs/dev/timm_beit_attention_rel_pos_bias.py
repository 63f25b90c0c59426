"""timm BEiT attention: q/k/v bias cat, fused vs explicit attention by flag, relative position bias table gather (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/models/beit.py:185-252
Kept: _get_rel_pos_bias (index view, permute, unsqueeze), forward (the
q_bias None / qkv_bias_separate switches, F.linear with the cat bias, unbind,
the fused_attn branch with the optional shared bias and
F.scaled_dot_product_attention, the explicit softmax branch), proj.
Simplified: 2x2 window + cls token, 2 heads of 2; the relative index is built in __init__.
"""
import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim=4, num_heads=2, window_size=(2, 2), fused_attn=True, qkv_bias_separate=False):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.fused_attn = fused_attn
        self.qkv_bias_separate = qkv_bias_separate
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.q_bias = nn.Parameter(torch.zeros(dim))
        self.register_buffer('k_bias', torch.zeros(dim), persistent=False)
        self.v_bias = nn.Parameter(torch.zeros(dim))
        self.window_size = window_size
        n = window_size[0] * window_size[1] + 1
        self.relative_position_bias_table = nn.Parameter(torch.randn(n * n, num_heads) * 0.02)
        self.register_buffer("relative_position_index", torch.arange(n * n).view(n, n), persistent=False)
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(0.0)

    def _get_rel_pos_bias(self):
        relative_position_bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(
            self.window_size[0] * self.window_size[1] + 1, self.window_size[0] * self.window_size[1] + 1, -1)
        relative_position_bias = relative_position_bias.permute(2, 0, 1).contiguous()
        return relative_position_bias.unsqueeze(0)

    def forward(self, x, shared_rel_pos_bias=None):
        B, N, C = x.shape
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
        if self.fused_attn:
            rel_pos_bias = None
            if self.relative_position_bias_table is not None:
                rel_pos_bias = self._get_rel_pos_bias()
                if shared_rel_pos_bias is not None:
                    rel_pos_bias = rel_pos_bias + shared_rel_pos_bias
            elif shared_rel_pos_bias is not None:
                rel_pos_bias = shared_rel_pos_bias
            x = F.scaled_dot_product_attention(q, k, v, attn_mask=rel_pos_bias, dropout_p=self.attn_drop.p if self.training else 0.)
        else:
            q = q * self.scale
            attn = (q @ k.transpose(-2, -1))
            if self.relative_position_bias_table is not None:
                attn = attn + self._get_rel_pos_bias()
            if shared_rel_pos_bias is not None:
                attn = attn + shared_rel_pos_bias
            attn = attn.softmax(dim=-1)
            attn = self.attn_drop(attn)
            x = attn @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        return self.proj_drop(self.proj(x))


class TwoAttentions(nn.Module):
    def __init__(self):
        super().__init__()
        self.fused = Attention(fused_attn=True)
        self.explicit = Attention(fused_attn=False, qkv_bias_separate=True)

    def forward(self, x, shared_rel_pos_bias=None):
        return self.fused(x, shared_rel_pos_bias) + self.explicit(x, shared_rel_pos_bias)


model = torch.compile(TwoAttentions().eval())


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 5, 4)
    return TwoAttentions().eval(), [(x,), (x, torch.randn(1, 2, 5, 5))]
