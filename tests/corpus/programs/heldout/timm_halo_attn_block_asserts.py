"""timm HaloAttn: `_assert(H % block_size == 0, '')` on shape ints, unfold-based halo windows, split of k/v (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/layers/halo_attn.py:206-247
Kept: the two divisibility _asserts, q reshape/permute by blocks, kv pad by
halo_size and double unfold, the split into k and v, the scale_pos_embed
switch, softmax, the output reshape/permute and pool.
Simplified: pos_embed is a learned bias; dim 4, block 2, halo 1, 1 head.
"""
import torch
import torch.nn.functional as F
from torch import nn

_assert = torch._assert


class HaloAttn(nn.Module):
    def __init__(self, dim=4, block_size=2, halo_size=1, scale_pos_embed=False):
        super().__init__()
        self.num_heads = 1
        self.dim_head_qk = dim
        self.dim_head_v = dim
        self.dim_out_v = dim
        self.scale = self.dim_head_qk ** -0.5
        self.scale_pos_embed = scale_pos_embed
        self.block_size = self.block_size_ds = block_size
        self.halo_size = halo_size
        self.win_size = block_size + halo_size * 2
        self.block_stride = 1
        self.q = nn.Conv2d(dim, self.dim_head_qk, 1, bias=False)
        self.kv = nn.Conv2d(dim, self.dim_head_qk + self.dim_head_v, 1, bias=False)
        self.rel_bias = nn.Parameter(torch.zeros(block_size * block_size, self.win_size * self.win_size))
        self.pool = nn.Identity()

    def pos_embed(self, q):
        return self.rel_bias

    def forward(self, x):
        B, C, H, W = x.shape
        _assert(H % self.block_size == 0, '')
        _assert(W % self.block_size == 0, '')
        num_h_blocks = H // self.block_size
        num_w_blocks = W // self.block_size
        num_blocks = num_h_blocks * num_w_blocks
        q = self.q(x)
        q = q.reshape(-1, self.dim_head_qk, num_h_blocks, self.block_size_ds, num_w_blocks, self.block_size_ds).permute(0, 1, 3, 5, 2, 4)
        q = q.reshape(B * self.num_heads, self.dim_head_qk, -1, num_blocks).transpose(1, 3)
        kv = self.kv(x)
        kv = F.pad(kv, [self.halo_size, self.halo_size, self.halo_size, self.halo_size])
        kv = kv.unfold(2, self.win_size, self.block_size).unfold(3, self.win_size, self.block_size).reshape(
            B * self.num_heads, self.dim_head_qk + self.dim_head_v, num_blocks, -1).permute(0, 2, 3, 1)
        k, v = torch.split(kv, [self.dim_head_qk, self.dim_head_v], dim=-1)
        if self.scale_pos_embed:
            attn = (q @ k.transpose(-1, -2) + self.pos_embed(q)) * self.scale
        else:
            attn = (q @ k.transpose(-1, -2)) * self.scale + self.pos_embed(q)
        attn = attn.softmax(dim=-1)
        out = (attn @ v).transpose(1, 3)
        out = out.reshape(-1, self.block_size_ds, self.block_size_ds, num_h_blocks, num_w_blocks)
        out = out.permute(0, 3, 1, 4, 2).contiguous().view(B, self.dim_out_v, H // self.block_stride, W // self.block_stride)
        return self.pool(out)


attn = torch.compile(HaloAttn())


def make():
    torch.manual_seed(0)
    return HaloAttn(), [(torch.randn(1, 4, 4, 4),)]
