"""nanotron's LLaMA RotaryEmbedding: a `while` loop on `position_ids[-1, -1] >= self.end` doubles the table size, the buffer is re-registered lazily, and a range check raises on out-of-range position ids.

Source: huggingface/nanotron@4796d2d9107a1f04d4ee70b09d3df22aca3a1d45:src/nanotron/models/llama.py:56-126
Kept: RotaryEmbedding verbatim (lazy init_rotary_embeddings with
register_buffer, the while-doubling on position ids / seq_length, the print,
complex rotation, the ValueError range guard); position ids built from the
sequence mask with cumsum as the inference path of CausalSelfAttention does.
Simplified: "cuda" became the input's device; the attention module keeps only
the q/k projection and the rotary calls (no tensor parallel linears, no flash
attention, no kv cache store).
"""
from typing import Optional

import torch
from torch import nn


class LlamaConfig:
    hidden_size = 16
    num_attention_heads = 2
    max_position_embeddings = 4


class RotaryEmbedding(nn.Module):
    def __init__(self, dim: int, end: int, theta: float = 10000.0):
        super().__init__()
        assert dim % 2 == 0
        self.dim = dim
        self.end = end
        self.theta = theta
        # TODO @nouamane: Figure out why we can't set `DTypeInvariantTensor` ...
        # TODO @thomasw21: Complex buffers break DDP, instead we store float and view them as complex
        self.freqs_cis: torch.Tensor
        self._initialized_buffer = False

    def init_rotary_embeddings(self, device="cpu"):
        if self._initialized_buffer is True:
            # Buffer if already initialized
            return
        self.register_buffer(
            "freqs_cis",
            torch.empty(self.end, self.dim // 2, 2, dtype=torch.float, device=device),
            persistent=False,
        )
        # TODO @nouamane: One we figure out how to do the DTypeInvariantTensor, this can be removed and changed to an assert
        if self.freqs_cis.dtype != torch.float:
            self.freqs_cis = self.freqs_cis.to(torch.float)
        assert self.freqs_cis.dtype == torch.float
        freqs = 1.0 / (
            self.theta
            ** (torch.arange(0, self.dim, 2, dtype=torch.float, device=device)[: (self.dim // 2)] / self.dim)
        )
        t = torch.arange(self.end, device=device)
        freqs = torch.outer(t, freqs).float()
        complex_freqs = torch.polar(torch.ones_like(freqs), freqs)
        freqs = torch.view_as_real(complex_freqs)
        self.freqs_cis.copy_(freqs)
        self._initialized_buffer = True

    def forward(
        self,
        x: torch.Tensor,  # [batch_size, seq_length, num_heads, d_qk]
        position_ids: Optional[torch.LongTensor],  # [batch_size, seq_length]
    ):
        batch_size, seq_length, num_heads, inner_dim = x.shape
        while (
            position_ids is not None and position_ids[-1, -1] >= self.end
        ) or seq_length >= self.end:  # TODO @nouamane: check if this causes cpu-gpu sync
            self.end *= 2
            self._initialized_buffer = False
        if self._initialized_buffer is False:
            print(f"Initializing rotary embeddings with end={self.end}")
            self.init_rotary_embeddings(device=x.device)
        dtype = x.dtype
        assert inner_dim % 2 == 0
        x = x.view(
            batch_size, seq_length, num_heads, inner_dim // 2, 2
        )  # [batch_size, q_length, num_heads, inner_dim]
        if x.dtype == torch.bfloat16:
            x = x.float()
        complex_x = torch.view_as_complex(x)  # [batch_size, q_length, num_heads, inner_dim // 2]
        if position_ids is None:
            freqs_cis = self.freqs_cis[None, :seq_length, None, :]
        else:
            # TODO(kunhao): Should None follow the num_heads dimension?
            if position_ids[-1, -1] < 0 or position_ids[-1, -1] >= self.end:  # Quick test hopefully
                raise ValueError(f"Position ids must be in the range [0, {self.end}), but got {position_ids}")
            freqs_cis = self.freqs_cis[position_ids][:, :, None, :]
        complex_freqs = torch.view_as_complex(freqs_cis)
        x_out = torch.view_as_real(complex_x * complex_freqs).view(batch_size, seq_length, num_heads, inner_dim)
        return x_out.type(dtype)


class CausalSelfAttention(nn.Module):
    def __init__(self, config: LlamaConfig):
        super().__init__()
        self.n_local_q_heads = config.num_attention_heads
        self.d_qk = config.hidden_size // config.num_attention_heads
        self.d_model = config.hidden_size
        self.qk_proj = nn.Linear(self.d_model, 2 * config.num_attention_heads * self.d_qk, bias=False)
        self.rotary_embedding = RotaryEmbedding(
            dim=self.d_qk,
            end=config.max_position_embeddings,
        )

    def forward(
        self,
        hidden_states,  # [batch_size, seq_length, hidden_size]
        sequence_mask,  # [batch_size, seq_length]
    ):
        batch_size, q_length, _ = hidden_states.shape
        query_states, key_states = (
            self.qk_proj(hidden_states)
            .view(batch_size, q_length, 2, self.n_local_q_heads, self.d_qk)
            .unbind(dim=2)
        )
        # Compute rotary embeddings
        # Note: keep track of old rotary embedding end to check if we need to enlarge k_cache and v_cache
        old_rotary_embed_end = self.rotary_embedding.end
        position_ids = torch.cumsum(sequence_mask, dim=-1, dtype=torch.int32) - 1
        query_states = self.rotary_embedding(query_states, position_ids=position_ids)
        key_states = self.rotary_embedding(key_states, position_ids=position_ids)
        return query_states, key_states, old_rotary_embed_end


attn = CausalSelfAttention(LlamaConfig())
compiled_attn = torch.compile(attn)

RAISING_INPUTS = {2: "ValueError"}


def make():
    torch.manual_seed(0)
    model = CausalSelfAttention(LlamaConfig())
    short = torch.randn(2, 3, 16)
    short_mask = torch.tensor([[True, True, True], [False, True, True]])
    long = torch.randn(2, 6, 16)
    long_mask = torch.ones(2, 6, dtype=torch.bool)
    all_padding = torch.zeros(2, 3, dtype=torch.bool)
    return model, [(short, short_mask), (long, long_mask), (short, all_padding)]
