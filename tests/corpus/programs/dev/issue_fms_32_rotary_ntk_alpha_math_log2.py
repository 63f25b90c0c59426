"""fms MultiHeadAttention + RotaryEmbedding with NTK scaling: `_alpha` via `math.log2`, per-device/per-alpha freq cache.

Source: foundation-model-stack/foundation-model-stack#32 (https://github.com/foundation-model-stack/foundation-model-stack/pull/32)
"fix some graph break issues when running with TP ... e.g. math.log2 compiles just fine in
single-GPU llama 7b, but fails to compile". Code is the pre-PR version,
foundation-model-stack/foundation-model-stack@ad6dc919^: fms/modules/positions.py
(PositionEncoder, RotaryEmbedding: _alpha with `math.log2(math.ceil(seq_len / self.max_seq_len))`,
compute_freqs_cis, reshape_for_broadcast, adjusted_qk with the chained
`self.cached_freqs[q.device.index][alpha][start_pos : start_pos + seq_len]`) and
fms/modules/attention.py (MultiHeadAttention.__init__/reset_params/forward).
Kept: the kv-cache concat path, mask/adjusted_mask plumbing, the sdp-backend toggles around
SDPA, the `use_cache` tuple return; ntk_scaling=True as in the PR's TP runs.
Simplified: emb_dim 16, 2 heads of 8, max_seq_len 4 (so a decode step past it takes alpha 2);
no Alibi, no TP subclasses or collectives.
"""
import math
from typing import Optional, Tuple

import torch
from torch import nn
from torch.nn import functional as F


class PositionEncoder:
    """
    Provides the ability to insert position-encoding logic into MHA.
    """

    # Override to adjust the mask e.g. for Alibi
    def adjusted_mask(
        self,
        mask: torch.Tensor,
        q: torch.Tensor,
        k: torch.Tensor,
        past_kv_state: torch.Tensor,
        use_cache=False,
    ) -> torch.Tensor:
        return mask

    # Override to adjust q/k's e.g. for rotary embeddings
    def adjusted_qk(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        past_kv_state: torch.Tensor,
        use_cache=False,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        return q, k


class RotaryEmbedding(PositionEncoder):
    def __init__(
        self, dim: int, ratio: int = 10_000, max_seq_len=2048, ntk_scaling=False
    ):
        super(RotaryEmbedding, self).__init__()
        self.dim = dim
        self.ratio = ratio
        self.cached_freqs = {}
        self.max_seq_len_cached = {}
        self.ntk_scaling = ntk_scaling
        self.max_seq_len = max_seq_len

    def _alpha(self, seq_len) -> int:
        if not self.ntk_scaling:
            alpha = 1
        else:
            alpha = int(
                2 ** math.ceil(math.log2(math.ceil(seq_len / self.max_seq_len)))
            )
        return alpha

    def compute_freqs_cis(self, device, max_seq_len=2048):
        alpha = self._alpha(max_seq_len)
        dev_idx = device.index

        if dev_idx not in self.cached_freqs:
            self.cached_freqs[dev_idx] = {}
        if dev_idx not in self.max_seq_len_cached:
            self.max_seq_len_cached[dev_idx] = 0

        max_seq_len = max(max_seq_len, self.max_seq_len * alpha)

        if (
            alpha in self.cached_freqs[dev_idx]
            and max_seq_len <= self.max_seq_len_cached[dev_idx]
        ):
            return alpha

        ratio = self.ratio
        dim = self.dim

        if self.ntk_scaling:
            ratio = ratio * alpha ** (dim / (dim - 2))

        freqs = 1.0 / (
            ratio
            ** (torch.arange(0, dim, 2, device=device)[: (dim // 2)].float() / dim)
        )

        t = torch.arange(max_seq_len, device=device, dtype=freqs.dtype)
        freqs = torch.outer(t, freqs).float()
        self.max_seq_len_cached[dev_idx] = max_seq_len
        self.cached_freqs[dev_idx][alpha] = torch.stack(
            [
                torch.cos(freqs),
                -torch.sin(freqs),
                torch.sin(freqs),
                torch.cos(freqs),
            ],
            dim=2,
        ).view(*freqs.shape, 2, 2)

        return alpha

    def reshape_for_broadcast(self, x: torch.Tensor, cur_freqs):
        ndim = x.ndim
        assert 1 < ndim, ndim
        assert cur_freqs.shape[:2] == (
            x.shape[2],
            x.shape[-2],
        ), f"for {cur_freqs.shape} and {x.shape}"
        shape = [d if i == 2 or i >= ndim - 2 else 1 for i, d in enumerate(x.shape)]
        return cur_freqs.view(*shape, 2)

    def adjusted_qk(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        past_kv_state: torch.Tensor = None,
        use_cache=False,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        start_pos = 0
        if use_cache and past_kv_state is not None:
            # TODO: handle batched start positions?
            start_pos = past_kv_state[0].shape[-2]

        seq_len = q.shape[2]
        q_ = q.float().reshape(*q.shape[:-1], -1, 2)  # B H L D/2 2
        k_ = k.float().reshape(*k.shape[:-1], -1, 2)  # B H L D/2 2

        if isinstance(start_pos, int):
            alpha = self.compute_freqs_cis(q.device, start_pos + seq_len)
            cur_freqs = self.cached_freqs[q.device.index][alpha][
                start_pos : start_pos + seq_len
            ]
            freqs = self.reshape_for_broadcast(q_, cur_freqs)
        else:
            # TODO: this branch currently unused
            max_start_pos = torch.max(start_pos).item()
            alpha = self.compute_freqs_cis(q.device, max_start_pos + seq_len)
            freqs_idxs = torch.arange(0, seq_len, dtype=torch.long).repeat(
                start_pos.shape[0]
            ).view(-1, seq_len) + start_pos.view(-1, 1)
            freqs = self.cached_freqs[q.device.index][alpha][freqs_idxs].unsqueeze(1)

        freqs = freqs.float()  # 1 1 L D/2 2 2
        q_out = freqs.mul(q_.unsqueeze(-2)).sum(5).flatten(3)
        k_out = freqs.mul(k_.unsqueeze(-2)).sum(5).flatten(3)

        return q_out.type_as(q).contiguous(), k_out.type_as(k).contiguous()


class MultiHeadAttention(nn.Module):
    def __init__(
        self,
        emb_dim,
        emb_kq,
        emb_v,
        nheads,
        kvheads,
        p_dropout=None,
        use_bias=False,
        position_encoder: Optional[PositionEncoder] = None,
        gain=1,
    ):
        super(MultiHeadAttention, self).__init__()
        self.nheads = nheads
        self.kvheads = kvheads
        self.emb_dim = emb_dim
        self.emb_kq_per_head = emb_kq
        self.emb_v_per_head = emb_v
        self.p_dropout = p_dropout if p_dropout is not None else 0.0
        self.use_bias = use_bias
        self.query = nn.Linear(
            self.emb_dim, self.nheads * self.emb_kq_per_head, bias=use_bias
        )
        self.key = nn.Linear(
            self.emb_dim, self.kvheads * self.emb_kq_per_head, bias=use_bias
        )
        self.value = nn.Linear(
            self.emb_dim, self.kvheads * self.emb_v_per_head, bias=use_bias
        )
        self.dense = nn.Linear(
            self.nheads * self.emb_v_per_head, self.emb_dim, bias=use_bias
        )
        if self.p_dropout:
            self.attn_dropout = nn.Dropout(self.p_dropout)
        self.position_encoder = position_encoder
        # Avoiding graph breaks
        self.previous_flash: bool = torch.backends.cuda.flash_sdp_enabled()
        self.previous_mem_efficient: bool = (
            torch.backends.cuda.mem_efficient_sdp_enabled()
        )
        self.previous_math: bool = torch.backends.cuda.math_sdp_enabled()
        self.reset_params(gain)

    def reset_params(self, gain=1):
        for layer in ["query", "key"]:
            nn.init.trunc_normal_(
                getattr(self, layer).weight, mean=0.0, std=self.emb_dim**-0.5
            )
        for layer in ["value", "dense"]:
            nn.init.trunc_normal_(
                getattr(self, layer).weight,
                mean=0.0,
                std=(gain / (self.emb_dim * self.nheads * self.emb_v_per_head) ** 0.5)
                ** 0.5,
            )
        if self.use_bias:
            for layer in ["query", "key", "value", "dense"]:
                getattr(self, layer).bias.data.zero_()

    def forward(
        self,
        q,
        k,
        v,
        mask=None,
        attn_algorithm=None,
        past_key_value_state=None,
        use_cache=False,
        is_self=True,
        is_causal_mask=False,
    ):
        batch_size, q_len, _ = q.size()
        kv_len = k.size(1)

        queries = self.query(q).view(
            batch_size, q_len, self.nheads, self.emb_kq_per_head
        )
        queries = queries.transpose(2, 1)

        if is_self or past_key_value_state is None:
            keys = self.key(k).view(
                batch_size, kv_len, self.kvheads, self.emb_kq_per_head
            )
            keys = keys.transpose(2, 1)

            values = self.value(v).view(
                batch_size, kv_len, self.kvheads, self.emb_v_per_head
            )
            values = values.transpose(2, 1)  # compatible with QK.T

            # You want to apply rotary embeddings pre-cache
            if self.position_encoder is not None:
                queries, keys = self.position_encoder.adjusted_qk(
                    queries, keys, past_key_value_state, use_cache
                )

        if use_cache and past_key_value_state is not None:
            if is_self:
                keys = torch.cat((past_key_value_state[0], keys), dim=2)
                values = torch.cat((past_key_value_state[1], values), dim=2)
            else:
                keys = past_key_value_state[0]
                values = past_key_value_state[1]

        if mask is not None:
            while len(mask.size()) != 4:  # expects bs (x nheads) x q_len x kv_len
                mask = mask.unsqueeze(1)

        if self.position_encoder is not None:
            attn_mask = self.position_encoder.adjusted_mask(
                mask, queries, keys, past_key_value_state, use_cache
            )
        else:
            attn_mask = mask

        # Expand kv so black-box attn will work
        expansion = self.nheads // self.kvheads
        if expansion != 1:
            keys_e = keys.unsqueeze(2).expand(-1, -1, expansion, -1, -1).flatten(1, 2)
            values_e = values.unsqueeze(2).expand(-1, -1, expansion, -1, -1).flatten(1, 2)
        else:
            keys_e = keys
            values_e = values

        if attn_algorithm:
            use_flash = attn_algorithm == "flash"
            use_mem_efficient = attn_algorithm == "mem"
            use_math = attn_algorithm == "math"

            torch.backends.cuda.enable_flash_sdp(use_flash)
            torch.backends.cuda.enable_mem_efficient_sdp(use_mem_efficient)
            torch.backends.cuda.enable_math_sdp(use_math)

        attn = F.scaled_dot_product_attention(
            queries,
            keys_e,
            values_e,
            attn_mask=attn_mask,
            dropout_p=self.p_dropout if self.training else 0.0,
            is_causal=is_causal_mask,
        )

        if attn_algorithm:
            torch.backends.cuda.enable_flash_sdp(self.previous_flash)
            torch.backends.cuda.enable_mem_efficient_sdp(self.previous_mem_efficient)
            torch.backends.cuda.enable_math_sdp(self.previous_math)

        attn = (
            attn.transpose(2, 1)
            .contiguous()
            .view(batch_size, q_len, self.nheads * self.emb_v_per_head)
        )
        out = self.dense(attn)

        if use_cache:
            return out, (keys, values)
        else:
            return out


def build_attention():
    rope = RotaryEmbedding(8, max_seq_len=4, ntk_scaling=True)
    return MultiHeadAttention(16, 8, 8, 2, 2, position_encoder=rope)


attn = torch.compile(build_attention())


def make():
    torch.manual_seed(0)
    m = build_attention()
    x = torch.randn(1, 3, 16)
    x_step = torch.randn(1, 1, 16)
    past = (torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8))
    return m, [
        (x, x, x, None, None, None, True, True, True),
        (x_step, x_step, x_step, None, None, past, True, True, False),
    ]
