"""torchvision shifted_window_attention: pad to window multiples, shift-size reset, slice-built mask, logit-scale clamp (no break).

Source: pytorch/vision@v0.29.2:torchvision/models/swin_transformer.py:116-228
Kept: padding with pad_r/pad_b, the `window_size[i] >= pad_H` shift reset on a
copy of shift_size, the `sum(shift_size) > 0` roll, window partition, qkv with
the optional logit_scale (cosine attention, clamp at log(100)), the 3x3 slice
loop filling the attention mask with a running count, the reverse roll and crop.
Simplified: single head; dim 4; relative position bias is a zeros tensor.
"""
import math

import torch
import torch.nn.functional as F
from torch import Tensor


def shifted_window_attention(input: Tensor, qkv_weight: Tensor, proj_weight: Tensor, relative_position_bias: Tensor,
                             window_size: list, num_heads: int, shift_size: list, logit_scale=None, training: bool = True):
    B, H, W, C = input.shape
    pad_r = (window_size[1] - W % window_size[1]) % window_size[1]
    pad_b = (window_size[0] - H % window_size[0]) % window_size[0]
    x = F.pad(input, (0, 0, 0, pad_r, 0, pad_b))
    _, pad_H, pad_W, _ = x.shape
    shift_size = shift_size.copy()
    if window_size[0] >= pad_H:
        shift_size[0] = 0
    if window_size[1] >= pad_W:
        shift_size[1] = 0
    if sum(shift_size) > 0:
        x = torch.roll(x, shifts=(-shift_size[0], -shift_size[1]), dims=(1, 2))
    num_windows = (pad_H // window_size[0]) * (pad_W // window_size[1])
    x = x.view(B, pad_H // window_size[0], window_size[0], pad_W // window_size[1], window_size[1], C)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(B * num_windows, window_size[0] * window_size[1], C)
    qkv = F.linear(x, qkv_weight)
    qkv = qkv.reshape(x.size(0), x.size(1), 3, num_heads, C // num_heads).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    if logit_scale is not None:
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        logit_scale = torch.clamp(logit_scale, max=math.log(100.0)).exp()
        attn = attn * logit_scale
    else:
        q = q * (C // num_heads) ** -0.5
        attn = q.matmul(k.transpose(-2, -1))
    attn = attn + relative_position_bias
    if sum(shift_size) > 0:
        attn_mask = x.new_zeros((pad_H, pad_W))
        h_slices = ((0, -window_size[0]), (-window_size[0], -shift_size[0]), (-shift_size[0], None))
        w_slices = ((0, -window_size[1]), (-window_size[1], -shift_size[1]), (-shift_size[1], None))
        count = 0
        for h in h_slices:
            for w in w_slices:
                attn_mask[h[0] : h[1], w[0] : w[1]] = count
                count += 1
        attn_mask = attn_mask.view(pad_H // window_size[0], window_size[0], pad_W // window_size[1], window_size[1])
        attn_mask = attn_mask.permute(0, 2, 1, 3).reshape(num_windows, window_size[0] * window_size[1])
        attn_mask = attn_mask.unsqueeze(1) - attn_mask.unsqueeze(2)
        attn_mask = attn_mask.masked_fill(attn_mask != 0, float(-100.0)).masked_fill(attn_mask == 0, float(0.0))
        attn = attn.view(x.size(0) // num_windows, num_windows, num_heads, x.size(1), x.size(1))
        attn = attn + attn_mask.unsqueeze(1).unsqueeze(0)
        attn = attn.view(-1, num_heads, x.size(1), x.size(1))
    attn = F.softmax(attn, dim=-1)
    x = attn.matmul(v).transpose(1, 2).reshape(x.size(0), x.size(1), C)
    x = F.linear(x, proj_weight)
    x = x.view(B, pad_H // window_size[0], pad_W // window_size[1], window_size[0], window_size[1], C)
    x = x.permute(0, 1, 3, 2, 4, 5).reshape(B, pad_H, pad_W, C)
    if sum(shift_size) > 0:
        x = torch.roll(x, shifts=(shift_size[0], shift_size[1]), dims=(1, 2))
    x = x[:, :H, :W, :].contiguous()
    return x


class ShiftedWindowAttentionV2(torch.nn.Module):
    def __init__(self, dim=4, window_size=(2, 2), shift_size=(1, 1)):
        super().__init__()
        self.window_size = list(window_size)
        self.shift_size = list(shift_size)
        self.qkv = torch.nn.Linear(dim, dim * 3, bias=False)
        self.proj = torch.nn.Linear(dim, dim, bias=False)
        self.logit_scale = torch.nn.Parameter(torch.log(10 * torch.ones((1, 1, 1))))

    def forward(self, x):
        bias = torch.zeros(1, 1, 4, 4)
        return shifted_window_attention(x, self.qkv.weight, self.proj.weight, bias, self.window_size, 1, self.shift_size, logit_scale=self.logit_scale, training=self.training)


attn = torch.compile(ShiftedWindowAttentionV2())


def make():
    torch.manual_seed(0)
    return ShiftedWindowAttentionV2(), [(torch.randn(1, 4, 4, 4),), (torch.randn(1, 3, 5, 4),), (torch.randn(1, 2, 2, 4),)]
