"""Mochi joint attention: per-sample `torch.nonzero` on the prompt mask inside a Python loop.

Source: https://github.com/tenstorrent/tt-xla/issues/5951
The issue's root-cause analysis quotes diffusers' MochiAttnProcessor2_0.__call__
(attention_processor.py:1066-1068): for each batch row the valid prompt tokens are
gathered with `torch.nonzero(mask.flatten())`, concatenated to the video tokens,
attended with SDPA, padded back and re-split. The transformer is compiled with
`torch.compile(pipe.transformer, mode="max-autotune-no-cudagraphs")`.
Kept: the processor body as in diffusers (unflatten heads, optional q/k norms, nested
apply_rotary_emb, the per-row nonzero loop, F.pad, split_with_sizes, to_out[0]/[1],
hasattr(attn, "to_add_out")); an Attention container that calls `self.processor`.
Simplified: one MochiTransformerBlock (norms, attn1, residuals; no MLP or modulation) is
compiled instead of the whole MochiTransformer3DModel; batch of one prompt; RMSNorm is torch.nn.RMSNorm; 2 heads of size 4.
"""
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


class MochiAttnProcessor2_0:
    """Attention processor used in Mochi."""

    def __init__(self):
        if not hasattr(F, "scaled_dot_product_attention"):
            raise ImportError("MochiAttnProcessor2_0 requires PyTorch 2.0. To use it, please upgrade PyTorch to 2.0.")

    def __call__(
        self,
        attn,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor,
        attention_mask: torch.Tensor,
        image_rotary_emb: Optional[torch.Tensor] = None,
    ) -> torch.Tensor:
        query = attn.to_q(hidden_states)
        key = attn.to_k(hidden_states)
        value = attn.to_v(hidden_states)

        query = query.unflatten(2, (attn.heads, -1))
        key = key.unflatten(2, (attn.heads, -1))
        value = value.unflatten(2, (attn.heads, -1))

        if attn.norm_q is not None:
            query = attn.norm_q(query)
        if attn.norm_k is not None:
            key = attn.norm_k(key)

        encoder_query = attn.add_q_proj(encoder_hidden_states)
        encoder_key = attn.add_k_proj(encoder_hidden_states)
        encoder_value = attn.add_v_proj(encoder_hidden_states)

        encoder_query = encoder_query.unflatten(2, (attn.heads, -1))
        encoder_key = encoder_key.unflatten(2, (attn.heads, -1))
        encoder_value = encoder_value.unflatten(2, (attn.heads, -1))

        if attn.norm_added_q is not None:
            encoder_query = attn.norm_added_q(encoder_query)
        if attn.norm_added_k is not None:
            encoder_key = attn.norm_added_k(encoder_key)

        if image_rotary_emb is not None:

            def apply_rotary_emb(x, freqs_cos, freqs_sin):
                x_even = x[..., 0::2].float()
                x_odd = x[..., 1::2].float()

                cos = (x_even * freqs_cos - x_odd * freqs_sin).to(x.dtype)
                sin = (x_even * freqs_sin + x_odd * freqs_cos).to(x.dtype)

                return torch.stack([cos, sin], dim=-1).flatten(-2)

            query = apply_rotary_emb(query, *image_rotary_emb)
            key = apply_rotary_emb(key, *image_rotary_emb)

        query, key, value = query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2)
        encoder_query, encoder_key, encoder_value = (
            encoder_query.transpose(1, 2),
            encoder_key.transpose(1, 2),
            encoder_value.transpose(1, 2),
        )

        sequence_length = query.size(2)
        encoder_sequence_length = encoder_query.size(2)
        total_length = sequence_length + encoder_sequence_length

        batch_size, heads, _, dim = query.shape
        attn_outputs = []
        for idx in range(batch_size):
            mask = attention_mask[idx][None, :]
            valid_prompt_token_indices = torch.nonzero(mask.flatten(), as_tuple=False).flatten()

            valid_encoder_query = encoder_query[idx : idx + 1, :, valid_prompt_token_indices, :]
            valid_encoder_key = encoder_key[idx : idx + 1, :, valid_prompt_token_indices, :]
            valid_encoder_value = encoder_value[idx : idx + 1, :, valid_prompt_token_indices, :]

            valid_query = torch.cat([query[idx : idx + 1], valid_encoder_query], dim=2)
            valid_key = torch.cat([key[idx : idx + 1], valid_encoder_key], dim=2)
            valid_value = torch.cat([value[idx : idx + 1], valid_encoder_value], dim=2)

            attn_output = F.scaled_dot_product_attention(
                valid_query, valid_key, valid_value, dropout_p=0.0, is_causal=False
            )
            valid_sequence_length = attn_output.size(2)
            attn_output = F.pad(attn_output, (0, 0, 0, total_length - valid_sequence_length))
            attn_outputs.append(attn_output)

        hidden_states = torch.cat(attn_outputs, dim=0)
        hidden_states = hidden_states.transpose(1, 2).flatten(2, 3)

        hidden_states, encoder_hidden_states = hidden_states.split_with_sizes(
            (sequence_length, encoder_sequence_length), dim=1
        )

        # linear proj
        hidden_states = attn.to_out[0](hidden_states)
        # dropout
        hidden_states = attn.to_out[1](hidden_states)

        if hasattr(attn, "to_add_out"):
            encoder_hidden_states = attn.to_add_out(encoder_hidden_states)

        return hidden_states, encoder_hidden_states


class MochiAttention(nn.Module):
    def __init__(self, query_dim, added_kv_proj_dim, heads=2, dim_head=4, eps=1e-5, processor=None):
        super().__init__()
        inner_dim = dim_head * heads
        self.heads = heads
        self.to_q = nn.Linear(query_dim, inner_dim, bias=False)
        self.to_k = nn.Linear(query_dim, inner_dim, bias=False)
        self.to_v = nn.Linear(query_dim, inner_dim, bias=False)
        self.add_k_proj = nn.Linear(added_kv_proj_dim, inner_dim, bias=False)
        self.add_v_proj = nn.Linear(added_kv_proj_dim, inner_dim, bias=False)
        self.add_q_proj = nn.Linear(added_kv_proj_dim, inner_dim, bias=False)
        self.norm_q = nn.RMSNorm(dim_head, eps=eps)
        self.norm_k = nn.RMSNorm(dim_head, eps=eps)
        self.norm_added_q = nn.RMSNorm(dim_head, eps=eps)
        self.norm_added_k = nn.RMSNorm(dim_head, eps=eps)
        self.to_out = nn.ModuleList([nn.Linear(inner_dim, query_dim), nn.Dropout(0.0)])
        self.to_add_out = nn.Linear(inner_dim, added_kv_proj_dim)
        self.processor = processor if processor is not None else MochiAttnProcessor2_0()

    def forward(self, hidden_states, encoder_hidden_states=None, attention_mask=None, **kwargs):
        return self.processor(
            self,
            hidden_states,
            encoder_hidden_states=encoder_hidden_states,
            attention_mask=attention_mask,
            **kwargs,
        )


class MochiTransformerBlock(nn.Module):
    def __init__(self, dim, pooled_projection_dim):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False)
        self.norm1_context = nn.LayerNorm(pooled_projection_dim, elementwise_affine=False)
        self.attn1 = MochiAttention(dim, pooled_projection_dim)

    def forward(self, hidden_states, encoder_hidden_states, encoder_attention_mask, image_rotary_emb=None):
        norm_hidden_states = self.norm1(hidden_states)
        norm_encoder_hidden_states = self.norm1_context(encoder_hidden_states)
        attn_hidden_states, context_attn_hidden_states = self.attn1(
            hidden_states=norm_hidden_states,
            encoder_hidden_states=norm_encoder_hidden_states,
            image_rotary_emb=image_rotary_emb,
            attention_mask=encoder_attention_mask,
        )
        hidden_states = hidden_states + attn_hidden_states
        encoder_hidden_states = encoder_hidden_states + context_attn_hidden_states
        return hidden_states, encoder_hidden_states


def build():
    return torch.compile(MochiTransformerBlock(8, 6).eval(), mode="max-autotune-no-cudagraphs")


def make():
    torch.manual_seed(0)
    hidden = torch.randn(1, 5, 8)
    enc = torch.randn(1, 4, 6)
    mask = torch.tensor([[1, 1, 1, 0]])
    full = torch.ones(1, 4, dtype=torch.long)
    cos, sin = torch.randn(5, 2, 2), torch.randn(5, 2, 2)
    return MochiTransformerBlock(8, 6).eval(), [
        (hidden, enc, mask),
        (hidden, enc, full, (cos, sin)),
    ]
