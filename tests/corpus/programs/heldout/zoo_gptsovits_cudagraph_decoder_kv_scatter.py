"""GPT-SoVITS CUDA-graph T2S decoder step: TransformerDecoder.forward over TransformerBlocks whose
Attention writes the new key/value into a preallocated KVCacheNHD buffer with scatter_ at
`input_pos - 1`, then attends over the whole cache with SDPA (the function the runner captures).

Source: RVC-Boss/GPT-SoVITS@08d627c3338173c3229286d8787060d6559fe0f8:GPT_SoVITS/AR/models/t2s_model_cudagraph.py:77-276,371-382
Kept: KVCacheNHD (register_buffer caches, update/empty), Attention.forward, FeedForward,
TransformerBlock.forward and TransformerDecoder.forward as written (explicit `.forward` calls,
the MutableSequence of caches zipped with the layers), T2SDecoder.init_cache's ModuleList.
Simplified: the prefill paths (nested tensors), the load_state_dict hooks and the embeddings are
dropped; hidden 16, 2 heads, 2 layers, max_seq_length 8, batch 1. The CUDA-graph capture of
`self.h.forward(input_pos, x, kv_caches)` becomes a torch.compile of the same call.
"""
from typing import MutableSequence

import torch
import torch.nn as nn
import torch.nn.functional as F

Tensor = torch.Tensor


class KVCacheNHD(nn.Module):
    def __init__(self, batch_size, max_seq_length, n_heads, head_dim):
        super().__init__()
        assert batch_size > 0
        cache_shape = (batch_size, max_seq_length, n_heads, head_dim)
        self.n_head = n_heads
        self.head_dim = head_dim
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self.register_buffer(
            "k_cache", torch.zeros(size=cache_shape), persistent=False
        )
        self.register_buffer(
            "v_cache", torch.zeros(size=cache_shape), persistent=False
        )

    def update(self, input_pos: Tensor, k_val: Tensor, v_val: Tensor):
        index = (
            (input_pos - 1)
            .unsqueeze(-1)
            .unsqueeze(-1)
            .unsqueeze(-1)
            .expand(-1, -1, self.n_head, self.head_dim)
            .to(torch.int64)
        )
        k_out = self.k_cache
        v_out = self.v_cache
        k_out.scatter_(1, index, k_val)
        v_out.scatter_(1, index, v_val)
        return k_out, v_out

    def empty(self):
        self.k_cache.zero_()
        self.v_cache.zero_()


class Attention(nn.Module):
    def __init__(self, n_head: int, hidden_dim: int):
        super().__init__()
        self.n_head = n_head
        self.hidden_dim = hidden_dim
        assert hidden_dim % n_head == 0
        self.head_dim = hidden_dim // n_head
        self.in_proj = nn.Linear(hidden_dim, hidden_dim * 3, bias=True)
        self.out_proj = nn.Linear(hidden_dim, hidden_dim, bias=True)
        self.dropout = nn.Dropout(0.1)

    def forward(
        self, x: Tensor, input_pos: Tensor, kv_cache: KVCacheNHD
    ) -> Tensor:
        bsz, seqlen, _ = x.shape

        q, k, v = self.in_proj.forward(x).chunk(3, dim=-1)

        q = q.view(bsz, seqlen, self.n_head, self.head_dim)
        k = k.view(bsz, seqlen, self.n_head, self.head_dim)
        v = v.view(bsz, seqlen, self.n_head, self.head_dim)

        k_cache, v_cache = kv_cache.update(input_pos, k, v)

        q = q.transpose(1, 2)  # [B, H, 1, D]
        k_out = k_cache.transpose(1, 2)  # [B, H, max_seq, D]
        v_out = v_cache.transpose(1, 2)  # [B, H, max_seq, D]

        attn = F.scaled_dot_product_attention(q, k_out, v_out)

        attn = self.dropout.forward(attn)
        attn = attn.transpose(1, 2).reshape(bsz, seqlen, self.hidden_dim)
        attn = self.out_proj.forward(attn)
        return attn


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.linear1 = nn.Linear(dim, hidden_dim, bias=True)
        self.linear2 = nn.Linear(hidden_dim, dim, bias=True)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout.forward(
            self.linear2(self.dropout.forward(F.relu(self.linear1(x))))
        )


class TransformerBlock(nn.Module):
    def __init__(self, n_head, ffn_dim, hidden_dim) -> None:
        super().__init__()
        self.hidden_dim = hidden_dim
        self.attention = Attention(n_head, hidden_dim)
        self.feed_forward = FeedForward(hidden_dim, ffn_dim)
        self.attention_norm = nn.LayerNorm([hidden_dim])
        self.ffn_norm = nn.LayerNorm([hidden_dim])
        self.dropout = nn.Dropout(0.1)

    def forward(
        self, x: Tensor, input_pos: Tensor, kv_cache: KVCacheNHD
    ) -> Tensor:
        h = self.attention_norm.forward(
            x + self.dropout.forward(self.attention.forward(x, input_pos, kv_cache))
        )
        out = self.ffn_norm.forward(h + self.feed_forward.forward(h))
        return out


class TransformerDecoder(nn.Module):
    def __init__(
        self,
        hidden_dim,
        n_layer,
        n_head,
        ffn_dim,
        vocab_size,
        max_seq_length,
        max_batch_size,
    ) -> None:
        super().__init__()
        self.hidden_dim = hidden_dim
        self.n_head = n_head
        assert hidden_dim % n_head == 0
        self.head_dim = hidden_dim // n_head
        self.vocab_size = vocab_size
        self.n_layer = n_layer
        self.layers = nn.ModuleList(
            TransformerBlock(n_head, ffn_dim, hidden_dim) for _ in range(n_layer)
        )
        self.max_seq_length: int = max_seq_length
        self.max_batch_size: int = max_batch_size

    def forward(
        self,
        input_pos: Tensor,
        x: Tensor,
        kv_caches: MutableSequence[KVCacheNHD],
    ):
        for layer, kv_cache in zip(self.layers, kv_caches):
            x = layer.forward(x, input_pos, kv_cache)
        return x


def init_cache(h: TransformerDecoder, n_layer, n_head, head_dim, bsz: int = 0) -> nn.ModuleList:
    bsz = bsz or h.max_batch_size
    assert bsz <= h.max_batch_size
    seq_lens = h.max_seq_length
    return nn.ModuleList(
        [
            KVCacheNHD(bsz, seq_lens, n_head, head_dim)
            for _ in range(n_layer)
        ],
    )


def build_decoder():
    hidden_dim, n_layer, n_head = 16, 2, 2
    return TransformerDecoder(hidden_dim, n_layer, n_head, hidden_dim * 4, 33, 8, 1).eval()


decode_step = torch.compile(build_decoder())


def make():
    torch.manual_seed(0)
    h = build_decoder()
    kv_cache = init_cache(h, 2, 2, 8, 1)
    xy_pos = torch.randn(1, 1, 16)
    return h, [(torch.tensor([3]).int(), xy_pos, kv_cache), (torch.tensor([4]).int(), xy_pos, kv_cache)]
