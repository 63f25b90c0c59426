"""timm Swin WindowAttention: fused SDPA with the relative bias plus an optional shifted-window mask, or the explicit path (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/models/swin_transformer.py:208-248
Kept: qkv reshape/unbind, the fused_attn switch, _get_rel_pos_bias, the
`mask is not None` reshapes with num_win from mask.shape[0] (view/expand in
the fused path, unsqueeze add in the explicit path), softmax, proj.
Simplified: window 2x2 (N=4), 2 heads, dim 4; bias table gathered in __init__.
"""
import torch
from torch import nn


class WindowAttention(nn.Module):
    def __init__(self, dim=4, num_heads=2, window_area=4, fused_attn=True):
        super().__init__()
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.fused_attn = fused_attn
        self.relative_position_bias_table = nn.Parameter(torch.randn(window_area * window_area, num_heads) * 0.02)
        self.register_buffer("relative_position_index", torch.arange(window_area * window_area).view(window_area, window_area), persistent=False)
        self.window_area = window_area
        self.qkv = nn.Linear(dim, dim * 3)
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(0.0)
        self.softmax = nn.Softmax(dim=-1)

    def _get_rel_pos_bias(self):
        relative_position_bias = self.relative_position_bias_table[self.relative_position_index.view(-1)].view(self.window_area, self.window_area, -1)
        return relative_position_bias.permute(2, 0, 1).contiguous().unsqueeze(0)

    def forward(self, x, mask=None):
        B_, N, C = x.shape
        qkv = self.qkv(x).reshape(B_, N, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        if self.fused_attn:
            attn_mask = self._get_rel_pos_bias()
            if mask is not None:
                num_win = mask.shape[0]
                mask = mask.view(1, num_win, 1, N, N).expand(B_ // num_win, -1, self.num_heads, -1, -1)
                attn_mask = attn_mask + mask.reshape(-1, self.num_heads, N, N)
            x = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=self.attn_drop.p if self.training else 0.)
        else:
            q = q * self.scale
            attn = q @ k.transpose(-2, -1)
            attn = attn + self._get_rel_pos_bias()
            if mask is not None:
                num_win = mask.shape[0]
                attn = attn.view(-1, num_win, self.num_heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
                attn = attn.view(-1, self.num_heads, N, N)
            attn = self.softmax(attn)
            attn = self.attn_drop(attn)
            x = attn @ v
        x = x.transpose(1, 2).reshape(B_, N, -1)
        return self.proj_drop(self.proj(x))


class Both(nn.Module):
    def __init__(self):
        super().__init__()
        self.fused = WindowAttention(fused_attn=True)
        self.explicit = WindowAttention(fused_attn=False)

    def forward(self, x, mask=None):
        return self.fused(x, mask) + self.explicit(x, mask)


model = torch.compile(Both().eval())


def make():
    torch.manual_seed(0)
    x = torch.randn(4, 4, 4)
    return Both().eval(), [(x,), (x, torch.zeros(2, 4, 4).masked_fill(torch.eye(4, dtype=torch.bool)[None].logical_not(), -100.0))]
