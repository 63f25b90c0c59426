"""foundation-model-stack RotaryEmbedding: the freqs cache is (re)filled from inside `adjusted_qk`.

Source: foundation-model-stack/foundation-model-stack#64 (https://github.com/foundation-model-stack/foundation-model-stack/pull/64)
The PR reports that "recomputing the cached cosines and sines for Rotary
Embeddings as part of the forward call causes a cascade of graph breaks" when
compiling Llama. The rotary code is translated from
foundation-model-stack/foundation-model-stack@01cadbc3:fms/modules/positions.py
(RopeNoScalingImpl, RopeNtkScalingImpl, RopeLlama3ScalingImpl, RotaryEmbedding:
compute_freqs_cis and adjusted_qk), where adjusted_qk still calls
`compute_freqs_cis(q.device, max_start_pos + seq_len)` with the tensor
`torch.max(position_ids[:, 0])`, and the per-device / per-alpha dict caches.
The attention module around it is a reduced stand-in shaped after
fms/modules/attention.py's MultiHeadAttention (q/k/v linears,
`position_encoder.adjusted_qk`, SDPA), not translated line by line.
Kept: the cache dicts keyed by `device.index` and alpha, the position_ids
construction with the cache offset, the 2x2 rotation-matrix application.
Simplified: no Alibi/Yarn/Pixtral classes (the yarn branch in adjusted_qk is
kept as written but unused), no partial rope config, no kv-cache concat;
emb 16, 2 heads, max_seq_len 32.
"""
import copy
import math
from collections import defaultdict
from typing import MutableMapping, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F


class PositionEncoder:
    def adjusted_mask(self, mask, q, k, past_kv_state, use_cache=False):
        return mask

    def adjusted_qk(self, q, k, position_ids, past_kv_state, use_cache=False):
        return q, k


class RopeNoScalingImpl:
    def __init__(
        self,
        dim: int,
        ratio: float = 10_000.0,
        orig_max_seq_len: int = 2048,
        scaling_info: dict = defaultdict(),
    ):
        self.dim = dim
        self.ratio = ratio
        self.orig_max_seq_len = orig_max_seq_len
        self.scaling_info = scaling_info

    def get_alpha(self, current_max_seq_len: int) -> int:
        return 1

    def scaled_max_seq_len(self, current_max_seq_len: int, alpha: int):
        return max(current_max_seq_len, self.orig_max_seq_len)

    def compute_scaled_freqs(self, device: str, alpha: int):
        ratio = self.ratio
        dim = self.dim

        freqs = 1.0 / (
            ratio
            ** (torch.arange(0, dim, 2, device=device)[: (dim // 2)].float() / dim)
        )
        return freqs


class RopeNtkScalingImpl(RopeNoScalingImpl):
    def get_alpha(self, current_max_seq_len: int) -> int:
        alpha = current_max_seq_len / self.orig_max_seq_len
        alpha = math.ceil(alpha)
        # for some reason math.log2 didn't `torch.compile` but
        # `math.log` does
        alpha = math.log(alpha) / math.log(2)
        alpha = math.ceil(alpha)
        alpha = 2**alpha
        alpha = int(alpha)
        return alpha

    def scaled_max_seq_len(self, current_max_seq_len: int, alpha: int):
        return max(current_max_seq_len, self.orig_max_seq_len * alpha)

    def compute_scaled_freqs(self, device: str, alpha: int):
        dim = self.dim
        ratio = self.ratio * alpha ** (dim / (dim - 2))

        freqs = 1.0 / (
            ratio
            ** (torch.arange(0, dim, 2, device=device)[: (dim // 2)].float() / dim)
        )
        return freqs


_rope_scale_mapping = {
    "ntk": RopeNtkScalingImpl,
    "regular": RopeNoScalingImpl,
}


class RotaryEmbedding(PositionEncoder):
    def __init__(
        self,
        dim: int,
        ratio: float = 10_000.0,
        max_seq_len: int = 2048,
        partial_rope=1.0,
        scaling={},
    ):
        super(RotaryEmbedding, self).__init__()
        self.partial_rope = partial_rope
        self.dim = int(partial_rope * dim)
        own_scaling = copy.deepcopy(scaling)
        if "rope_type" not in own_scaling:
            own_scaling["rope_type"] = "regular"
        self.rope_type = own_scaling["rope_type"]
        self.rope_scaling: RopeNoScalingImpl = _rope_scale_mapping[
            own_scaling["rope_type"]
        ](self.dim, ratio, max_seq_len, own_scaling)
        self.cached_freqs: MutableMapping[int, MutableMapping[int, torch.Tensor]] = {}
        self.max_seq_len_cached: MutableMapping[int, int] = {}

    def compute_freqs_cis(self, device, max_seq_len=2048):
        alpha = self.rope_scaling.get_alpha(max_seq_len)

        if device == torch.device("meta"):
            return alpha

        dev_idx = device.index

        if dev_idx not in self.cached_freqs:
            self.cached_freqs[dev_idx] = {}
        if dev_idx not in self.max_seq_len_cached:
            self.max_seq_len_cached[dev_idx] = 0

        if alpha not in self.cached_freqs[dev_idx]:
            # This avoids a graph break from computing scaled_max_seq_len if not needed
            scaled_max_seq_len = self.rope_scaling.scaled_max_seq_len(
                max_seq_len, alpha
            )

            if scaled_max_seq_len > self.max_seq_len_cached[dev_idx]:
                # This only runs if a particular combination of alpha
                # and max_seq_len hasn't been seen before
                freqs = self.rope_scaling.compute_scaled_freqs(device, alpha)
                t = torch.arange(scaled_max_seq_len, device=device, dtype=freqs.dtype)
                freqs = torch.outer(t, freqs).float()

                self.max_seq_len_cached[dev_idx] = scaled_max_seq_len

                if self.rope_type == "yarn":
                    cos = freqs.cos() * self.rope_scaling.concentration
                    sin = freqs.sin() * self.rope_scaling.concentration

                    self.cached_freqs[dev_idx][alpha] = (cos, sin)
                else:
                    self.cached_freqs[dev_idx][alpha] = torch.stack(
                        [
                            torch.cos(freqs),
                            -torch.sin(freqs),
                            torch.sin(freqs),
                            torch.cos(freqs),
                        ],
                        dim=2,
                    ).view(*freqs.size(), 2, 2)

        return alpha

    def adjusted_qk(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        position_ids: Optional[torch.Tensor] = None,
        past_kv_state: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
        use_cache=False,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        assert len(q.size()) == 4
        assert len(k.size()) == 4

        seq_len = max(k.size(1), q.size(1))
        if position_ids is None:
            # Compute position_ids based on cache config
            position_ids = torch.arange(
                0, seq_len, dtype=torch.long, device=q.device
            ).repeat(k.size(0), 1)
            if (
                use_cache
                and past_kv_state is not None
                and past_kv_state[0] is not None
                and past_kv_state[0].numel() > 0
            ):
                position_ids += past_kv_state[0].size(2)

        # the max start position should be based on the max first position of each sequence
        max_start_pos = torch.max(position_ids[:, 0])

        if self.partial_rope != 1.0:
            q_rope = q[..., : self.dim]
            k_rope = k[..., : self.dim]
        else:
            q_rope = q
            k_rope = k
        q_ = q_rope.float().view(*q.size()[:-1], -1, 2)  # B L H D/2 2
        k_ = k_rope.float().view(*k.size()[:-1], -1, 2)  # B L H D/2 2

        # the max start position should be based on the max first position of each sequence
        max_start_pos = torch.max(position_ids[:, 0])

        alpha = self.compute_freqs_cis(q.device, max_start_pos + seq_len)

        if self.rope_type == "yarn":
            freqs = self.cached_freqs[q.device.index][alpha]

            cos = freqs[0]
            sin = freqs[1]

            query_shape = q.shape
            key_shape = k.shape

            query = self.rope_scaling.apply_yarn_rotary_emb(q, cos, sin, position_ids)  # type: ignore
            key = self.rope_scaling.apply_yarn_rotary_emb(k, cos, sin, position_ids)  # type: ignore

            return query.reshape(query_shape), key.reshape(key_shape)

        freqs = self.cached_freqs[q.device.index][alpha][position_ids]

        position_ids = position_ids.clamp(max=freqs.size(0) - 1)

        freqs = freqs.float()  # 1 L D/2 2 2

        q_out = (
            freqs[:, -q.size(1) :, None, :, :, :]
            .mul(q_.unsqueeze(-2))
            .sum(5)
            .flatten(3)
        ).type_as(q)
        k_out = (
            freqs[:, -k.size(1) :, None, :, :, :]
            .mul(k_.unsqueeze(-2))
            .sum(5)
            .flatten(3)
        ).type_as(k)

        if self.partial_rope != 1.0:
            q_out = torch.cat([q_out.view_as(q_rope), q[..., self.dim :]], dim=-1)
            k_out = torch.cat([k_out.view_as(k_rope), k[..., self.dim :]], dim=-1)
        else:
            q_out = q_out.view_as(q_rope)
            k_out = k_out.view_as(k_rope)
        return q_out, k_out


class MultiHeadAttention(nn.Module):
    def __init__(self, emb_dim, emb_kq, emb_v, nheads, p_dropout=None, use_bias=False, position_encoder=None):
        super().__init__()
        self.nheads = nheads
        self.emb_dim = emb_dim
        self.emb_kq_per_head = emb_kq
        self.emb_v_per_head = emb_v
        self.p_dropout = p_dropout if p_dropout is not None else 0.0
        self.query = nn.Linear(self.emb_dim, self.nheads * self.emb_kq_per_head, bias=use_bias)
        self.key = nn.Linear(self.emb_dim, self.nheads * self.emb_kq_per_head, bias=use_bias)
        self.value = nn.Linear(self.emb_dim, self.nheads * self.emb_v_per_head, bias=use_bias)
        self.dense = nn.Linear(self.nheads * self.emb_v_per_head, self.emb_dim, bias=use_bias)
        self.position_encoder = position_encoder

    def forward(self, q, k, v, mask=None, position_ids=None, attn_algorithm=None,
                past_key_value_state=None, use_cache=False, is_self=True, is_causal_mask=False):
        batch_size, q_len, _ = q.size()
        kv_len = k.size(1)

        queries = self.query(q).view(batch_size, q_len, self.nheads, self.emb_kq_per_head)
        keys = self.key(k).view(batch_size, kv_len, self.nheads, self.emb_kq_per_head)
        values = self.value(v).view(batch_size, kv_len, self.nheads, self.emb_v_per_head)

        # You want to apply rotary embeddings pre-cache
        if self.position_encoder is not None:
            queries, keys = self.position_encoder.adjusted_qk(
                queries, keys, position_ids, past_key_value_state, use_cache
            )

        queries = queries.transpose(2, 1)
        keys = keys.transpose(2, 1)
        values = values.transpose(2, 1)

        if self.position_encoder is not None:
            attn_mask = self.position_encoder.adjusted_mask(
                mask, queries, keys, past_key_value_state, use_cache
            )
        else:
            attn_mask = mask

        attn = F.scaled_dot_product_attention(
            queries,
            keys,
            values,
            attn_mask=attn_mask,
            dropout_p=self.p_dropout if self.training else 0.0,
            is_causal=is_causal_mask,
        )

        attn = attn.transpose(2, 1).contiguous()
        attn = attn.view(batch_size, q_len, self.nheads * self.emb_v_per_head)
        out = self.dense(attn)

        if use_cache:
            return out, (keys, values)
        else:
            return out


def build(rope_type="regular"):
    rotary_emb = RotaryEmbedding(dim=8, ratio=10_000.0, max_seq_len=32, scaling={"rope_type": rope_type})
    return MultiHeadAttention(16, 8, 8, 2, position_encoder=rotary_emb)


attn = torch.compile(build())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 6, 16)
    pos = torch.arange(4, 10).repeat(2, 1)
    return build(), [
        (x, x, x),
        (x, x, x, None, pos),
        (x[:, :3], x[:, :3], x[:, :3], None, None, None, None, False, True, True),
    ]
