"""MiniCPM-V resampler: `_adjust_pos_cache` branches on `torch.max(tgt_sizes[:, 0]) > self.max_size[0]` and
re-registers a NumPy-built sin-cos buffer; forward sizes the key padding mask with `torch.max(patch_len)` and
slices the positional cache with `tgt_h, tgt_w = tgt_sizes[i]`.

Source: openbmb/MiniCPM-Llama3-V-2_5 resampler.py (the file the census downloads; the same Resampler ships in
MiniCPM-o), `Resampler._set_2d_pos_cache`, `_adjust_pos_cache`, `forward`
Census: penguinwu/oss-model-graph-break-corpus corpora/custom-models: MiniCPM-V-Resampler, graph_break in eval and
train ("data-dep branch, scalar", 5 breaks).
Kept: the MAE-style `get_2d_sincos_pos_embed` in NumPy, both cache methods, forward's assert, patch lengths,
per-image slicing, key padding mask writes, pad_sequence, attention with the padding mask, ln/proj.
Simplified: embed_dim 8, 2 heads, 16 queries, max_size (3, 3); no deepspeed device switch.
"""
import numpy as np
import torch
from torch import nn


def get_1d_sincos_pos_embed_from_grid(embed_dim, pos):
    omega = np.arange(embed_dim // 2, dtype=np.float32)
    omega /= embed_dim / 2.0
    omega = 1.0 / 10000**omega  # (D/2,)
    out = np.einsum("hw,d->hwd", pos, omega)  # (H, W, D/2), outer product
    emb_sin = np.sin(out)  # (H, W, D/2)
    emb_cos = np.cos(out)  # (H, W, D/2)
    return np.concatenate([emb_sin, emb_cos], axis=-1)  # (H, W, D)


def get_2d_sincos_pos_embed(embed_dim, image_size):
    if isinstance(image_size, int):
        grid_h_size, grid_w_size = image_size, image_size
    else:
        grid_h_size, grid_w_size = image_size[0], image_size[1]
    grid_h = np.arange(grid_h_size, dtype=np.float32)
    grid_w = np.arange(grid_w_size, dtype=np.float32)
    grid = np.meshgrid(grid_w, grid_h)  # here w goes first
    grid = np.stack(grid, axis=0)
    emb_h = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[0])  # (H, W, D/2)
    emb_w = get_1d_sincos_pos_embed_from_grid(embed_dim // 2, grid[1])  # (H, W, D/2)
    return np.concatenate([emb_h, emb_w], axis=-1)  # (H, W, D)


class Resampler(nn.Module):
    def __init__(self, num_queries=16, embed_dim=8, num_heads=2, kv_dim=6, max_size=(3, 3)):
        super().__init__()
        self.num_queries = num_queries
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.max_size = list(max_size)
        self.query = nn.Parameter(torch.randn(self.num_queries, embed_dim) * 0.02)
        self.kv_proj = nn.Linear(kv_dim, embed_dim, bias=False)
        self.attn = nn.MultiheadAttention(embed_dim, num_heads)
        self.ln_q = nn.LayerNorm(embed_dim)
        self.ln_kv = nn.LayerNorm(embed_dim)
        self.ln_post = nn.LayerNorm(embed_dim)
        self.proj = nn.Parameter((embed_dim**-0.5) * torch.randn(embed_dim, embed_dim))
        self._set_2d_pos_cache(self.max_size)

    def _set_2d_pos_cache(self, max_size, device="cpu"):
        pos_embed = torch.from_numpy(get_2d_sincos_pos_embed(self.embed_dim, max_size)).float().to(device)
        self.register_buffer("pos_embed", pos_embed, persistent=False)

    def _adjust_pos_cache(self, tgt_sizes, device):
        max_h = torch.max(tgt_sizes[:, 0])
        max_w = torch.max(tgt_sizes[:, 1])
        if max_h > self.max_size[0] or max_w > self.max_size[1]:
            self.max_size = [max(max_h, self.max_size[0]), max(max_w, self.max_size[1])]
            self._set_2d_pos_cache(self.max_size, device)

    def forward(self, x, tgt_sizes=None):
        assert x.shape[0] == tgt_sizes.shape[0]
        bs = x.shape[0]

        device = x.device
        dtype = x.dtype

        patch_len = tgt_sizes[:, 0] * tgt_sizes[:, 1]

        self._adjust_pos_cache(tgt_sizes, device=device)

        max_patch_len = torch.max(patch_len)
        key_padding_mask = torch.zeros((bs, max_patch_len), dtype=torch.bool, device=device)

        pos_embed = []
        for i in range(bs):
            tgt_h, tgt_w = tgt_sizes[i]
            pos_embed.append(self.pos_embed[:tgt_h, :tgt_w, :].reshape((tgt_h * tgt_w, -1)).to(dtype))  # patches * D
            key_padding_mask[i, patch_len[i] :] = True

        pos_embed = torch.nn.utils.rnn.pad_sequence(pos_embed, batch_first=True, padding_value=0.0).permute(
            1, 0, 2
        )  # BLD => L * B * D

        x = self.kv_proj(x)  # B * L * D
        x = self.ln_kv(x).permute(1, 0, 2)  # L * B * D

        q = self.ln_q(self.query)  # Q * D

        out = self.attn(
            self._repeat(q, bs),  # Q * B * D
            x + pos_embed,  # L * B * D +  L * B * D
            x,
            key_padding_mask=key_padding_mask,
        )[0]
        #  out: Q * B * D
        x = out.permute(1, 0, 2)  # B * Q * D

        x = self.ln_post(x)
        x = x @ self.proj
        return x

    def _repeat(self, query, N: int):
        return query.unsqueeze(1).repeat(1, N, 1)


resampler = torch.compile(Resampler())


def make():
    torch.manual_seed(0)
    return Resampler(), [
        (torch.randn(2, 9, 6), torch.tensor([[3, 3], [2, 3]])),
        (torch.randn(2, 16, 6), torch.tensor([[4, 4], [2, 2]])),
    ]
