"""torchaudio WavLMSelfAttention with a key padding mask from lengths: `torch.nn.functional._canonical_mask` turns the bool mask into an additive one and adds it to the gated relative position bias.

Source: pytorch/audio@d20fa3c7fa7c80f4bca6dcc34322b44af1aaecae:src/torchaudio/models/wav2vec2/wavlm_attention.py:33-214
Kept: WavLMSelfAttention whole (__init__ with rel_attn_embed only when
has_relative_attention_bias, head_dim assert, nn.MultiheadAttention used
for its in_proj/out_proj weights, gru_rel_pos linear + const;
compute_bias, _relative_positions_bucket with the bidirectional branch,
torch.log / math.log bucket formula, torch.min clamp and torch.where;
forward with its asserts, `position_bias is None` computation and repeat,
the gating, the key-padding branch, chunked in-projection,
`self.dropout if self.training else 0.0`, scaled_dot_product_attention,
the (output, position_bias) tuple return).
Simplified: the WavLM encoder around it is two pre-norm layers that pass
position_bias from the first (has_relative_attention_bias=True) to the
second, as the wav2vec2 Transformer does; embed dim 8, 2 heads, 8 buckets,
max distance 16. The bool padding mask is built from lengths the way the
wav2vec2 encoder builds it (arange >= lengths[:, None]); a second input
set passes no lengths.
"""
import math
from typing import Optional, Tuple

import torch
from torch import nn, Tensor


class WavLMSelfAttention(nn.Module):
    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        has_relative_attention_bias: bool = False,
        num_buckets: int = 32,
        max_distance: int = 128,
        gru_rel_pos: bool = True,
    ):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.has_relative_attention_bias = has_relative_attention_bias
        self.num_buckets = num_buckets
        self.max_distance = max_distance

        if has_relative_attention_bias:
            self.rel_attn_embed = nn.Embedding(num_buckets, num_heads)
        else:
            self.rel_attn_embed = None

        self.head_dim = embed_dim // num_heads
        assert self.head_dim * num_heads == self.embed_dim, "embed_dim must be divisible by num_heads"

        self.dropout = dropout
        self.attention = nn.MultiheadAttention(embed_dim, num_heads, dropout=dropout, bias=bias, batch_first=True)

        self.gru_rel_pos = gru_rel_pos
        if self.gru_rel_pos:
            self.gru_rel_pos_linear = nn.Linear(self.head_dim, 8)
            self.gru_rel_pos_const = nn.Parameter(torch.ones(1, num_heads, 1, 1))
        self.has_position_bias = True

    def compute_bias(self, query_length: int, key_length: int) -> Tensor:
        device = self.rel_attn_embed.weight.device
        context_position = torch.arange(query_length, dtype=torch.long, device=device)[:, None]
        memory_position = torch.arange(key_length, dtype=torch.long, device=device)[None, :]
        relative_position = memory_position - context_position  # Shape (query_length, key_length)
        relative_position_bucket = self._relative_positions_bucket(relative_position, bidirectional=True)
        values = self.rel_attn_embed(relative_position_bucket)  # Shape (query_length, key_length, num_heads)
        values = values.permute([2, 0, 1])
        return values

    def _relative_positions_bucket(self, relative_positions: Tensor, bidirectional: bool = True):
        num_buckets = self.num_buckets
        max_distance = self.max_distance
        # Shape (query_length, key_length)
        relative_buckets = torch.zeros_like(relative_positions, dtype=torch.long)

        if bidirectional:
            num_buckets = num_buckets // 2
            relative_buckets += (relative_positions > 0).to(torch.long) * num_buckets
            relative_positions = torch.abs(relative_positions)
        else:
            relative_positions = -torch.min(relative_positions, torch.zeros_like(relative_positions))

        max_exact = num_buckets // 2
        is_small = relative_positions < max_exact

        relative_postion_if_large = max_exact + (
            torch.log(relative_positions.float() / max_exact)
            / math.log(max_distance / max_exact)
            * (num_buckets - max_exact)
        ).to(torch.long)
        relative_postion_if_large = torch.min(
            relative_postion_if_large, torch.full_like(relative_postion_if_large, num_buckets - 1)
        )

        relative_buckets += torch.where(is_small, relative_positions, relative_postion_if_large)
        return relative_buckets

    def forward(
        self,
        query: Tensor,
        key_padding_mask: Optional[Tensor] = None,
        attention_mask: Optional[Tensor] = None,
        position_bias: Optional[Tensor] = None,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        bsz, seq_len, embed_dim = query.size()
        assert embed_dim == self.embed_dim
        assert attention_mask is None

        if self.rel_attn_embed is not None and position_bias is None:
            position_bias = self.compute_bias(seq_len, seq_len)
            position_bias = position_bias.unsqueeze(0).repeat(bsz, 1, 1, 1)

        attn_mask_rel_pos: Optional[Tensor] = None
        if position_bias is not None:
            attn_mask_rel_pos = position_bias
            if self.gru_rel_pos:  # Apply gating on relative position bias
                query_layer = query.view(bsz, seq_len, self.num_heads, -1)
                query_layer = query_layer.permute(0, 2, 1, 3)

                gate_a, gate_b = torch.sigmoid(
                    self.gru_rel_pos_linear(query_layer).view(bsz, self.num_heads, seq_len, 2, 4).sum(-1, keepdim=False)
                ).chunk(2, dim=-1)
                gate_a_1 = gate_a * (gate_b * self.gru_rel_pos_const - 1.0) + 2.0
                attn_mask_rel_pos = gate_a_1.view(bsz, self.num_heads, -1, 1) * position_bias

            attn_mask_rel_pos = attn_mask_rel_pos.view((bsz, self.num_heads, seq_len, seq_len))

        if attn_mask_rel_pos is not None and key_padding_mask is not None:
            key_padding_mask = key_padding_mask.view(bsz, 1, 1, seq_len).expand(-1, self.num_heads, -1, -1)
            key_padding_mask = torch.nn.functional._canonical_mask(
                mask=key_padding_mask,
                mask_name="key_padding_mask",
                other_type=torch.nn.functional._none_or_dtype(attn_mask_rel_pos),
                other_name="",
                target_type=query.dtype,
            )
        if attn_mask_rel_pos is not None and key_padding_mask is not None:
            attn_mask_rel_pos = attn_mask_rel_pos + key_padding_mask
        query_projected = torch.nn.functional.linear(query, self.attention.in_proj_weight, self.attention.in_proj_bias)
        query, key, value = query_projected.chunk(3, -1)
        shape = (bsz, seq_len, self.num_heads, self.head_dim)
        query = query.view(shape).transpose(2, 1)  # (batch, num_heads, seq_len, head_dim)
        key = key.view(shape).transpose(2, 1)  # (batch, num_heads, seq_len, head_dim)
        value = value.view(shape).transpose(2, 1)  # (batch, num_heads, seq_len, head_dim)
        dropout = self.dropout if self.training else 0.0
        attn_output = torch.nn.functional.scaled_dot_product_attention(
            query,
            key,
            value,
            attn_mask=attn_mask_rel_pos,
            dropout_p=dropout,
            is_causal=False,
        )
        attn_output = attn_output.transpose(1, 2).reshape(bsz, -1, self.num_heads * self.head_dim)
        attn_output = self.attention.out_proj(attn_output)
        return attn_output, position_bias


class EncoderLayer(nn.Module):
    def __init__(self, attention, embed_dim):
        super().__init__()
        self.attention = attention
        self.layer_norm = nn.LayerNorm(embed_dim)
        self.final_layer_norm = nn.LayerNorm(embed_dim)
        self.feed_forward = nn.Sequential(nn.Linear(embed_dim, 16), nn.GELU(), nn.Linear(16, embed_dim))

    def forward(self, x, key_padding_mask=None, position_bias=None):
        residual = x
        x = self.layer_norm(x)
        x, position_bias = self.attention(x, key_padding_mask=key_padding_mask, position_bias=position_bias)
        x = residual + x
        x = x + self.feed_forward(self.final_layer_norm(x))
        return x, position_bias


class WavLMEncoder(nn.Module):
    def __init__(self, embed_dim=8, num_heads=2, num_layers=2, num_buckets=8, max_distance=16, dropout=0.1):
        super().__init__()
        self.layers = nn.ModuleList(
            [
                EncoderLayer(
                    WavLMSelfAttention(
                        embed_dim,
                        num_heads,
                        dropout=dropout,
                        has_relative_attention_bias=(i == 0),
                        num_buckets=num_buckets,
                        max_distance=max_distance,
                        gru_rel_pos=True,
                    ),
                    embed_dim,
                )
                for i in range(num_layers)
            ]
        )

    def forward(self, x, lengths: Optional[Tensor] = None):
        key_padding_mask = None
        if lengths is not None:
            batch_size, max_len, _ = x.shape
            key_padding_mask = torch.arange(max_len, device=lengths.device).expand(batch_size, max_len) >= lengths[:, None]
        position_bias = None
        for layer in self.layers:
            x, position_bias = layer(x, key_padding_mask=key_padding_mask, position_bias=position_bias)
        return x


encoder = torch.compile(WavLMEncoder().eval())


def make():
    torch.manual_seed(0)
    return WavLMEncoder().eval(), [(torch.randn(2, 12, 8), torch.tensor([12, 7])), (torch.randn(2, 12, 8), None)]
