"""InternLM RotaryEmbedding on packed sequences: the attention passes `indexes` through `**kwargs`, `_update_cos_sin_cache` takes `indexes.max().item() + 1` and rebuilds the cos/sin tables when that exceeds the cached length, and the tables are indexed by the `indexes` tensor.

Source: InternLM/InternLM@0417fabad9612341a0e31f349b4bdff25cf7a54f:internlm/model/embedding.py:62-221
Also: internlm/model/multi_head_attention.py (MHA.forward -> _packed_forward:
`qkv = self.rotary_emb(qkv, **kwargs)` with kwargs carrying `indexes`),
internlm/model/modeling_internlm.py (PackedFlashBaseLayer1D builds
`mixer_kwargs` and calls `self.mixer(hidden_states, **mixer_kwargs)`).
Kept: RotaryEmbedding verbatim (xPos scale branch, kwargs dispatch to
_forward / _eval_forward, _update_cos_sin_cache); ApplyRotaryEmbQKV_'s
forward shape checks and in-place update of q and k.
Simplified: the `rotary_emb.apply_rotary` CUDA kernel and flash-attn's legacy
function are replaced by the same rotation written in torch (in place on the
q/k halves); einops rearrange by unsqueeze; the attention after the rotary is
plain softmax attention over the packed tokens; hidden 8, 2 heads.
"""
from typing import Tuple

import torch
import torch.nn.functional as F
from torch import nn


def _apply_rotary(x1, x2, cos, sin, out1, out2, conj):
    # the math of rotary_emb.apply_rotary, in torch
    if not conj:
        o1 = x1 * cos - x2 * sin
        o2 = x1 * sin + x2 * cos
    else:
        o1 = x1 * cos + x2 * sin
        o2 = -x1 * sin + x2 * cos
    out1.copy_(o1)
    out2.copy_(o2)


class ApplyRotaryEmbQKV_(torch.autograd.Function):
    """
    ApplyRotaryEmbQKV_
    """

    @staticmethod
    def forward(ctx, qkv, cos, sin, cos_k=None, sin_k=None):
        _, three, _, headdim = qkv.shape
        assert three == 3
        rotary_seqlen, rotary_dim = cos.shape
        rotary_dim *= 2
        assert rotary_dim <= headdim
        cos_k = cos if cos_k is None else cos_k
        sin_k = sin if sin_k is None else sin_k
        assert sin.shape == cos_k.shape == sin_k.shape == (rotary_seqlen, rotary_dim // 2)
        q1, q2 = qkv[:, 0, :, :rotary_dim].chunk(2, dim=-1)
        _apply_rotary(q1, q2, cos.unsqueeze(1), sin.unsqueeze(1), q1, q2, False)
        k1, k2 = qkv[:, 1, :, :rotary_dim].chunk(2, dim=-1)
        _apply_rotary(k1, k2, cos_k.unsqueeze(1), sin_k.unsqueeze(1), k1, k2, False)
        ctx.save_for_backward(cos, sin, cos_k, sin_k)
        return qkv

    @staticmethod
    def backward(ctx, dqkv):
        cos, sin, cos_k, sin_k = ctx.saved_tensors
        rotary_dim = cos.shape[-1]
        rotary_dim *= 2
        dq1, dq2 = dqkv[:, 0, :, :rotary_dim].chunk(2, dim=-1)
        _apply_rotary(dq1, dq2, cos.unsqueeze(1), sin.unsqueeze(1), dq1, dq2, True)
        dk1, dk2 = dqkv[:, 1, :, :rotary_dim].chunk(2, dim=-1)
        _apply_rotary(dk1, dk2, cos_k.unsqueeze(1), sin_k.unsqueeze(1), dk1, dk2, True)
        return dqkv, None, None, None, None


apply_rotary_emb_qkv_ = ApplyRotaryEmbQKV_.apply


class RotaryEmbedding(torch.nn.Module):
    def __init__(self, dim: int, base=10000, scale_base=0, device=None):
        """ """
        super().__init__()
        # Generate and save the inverse frequency buffer (non trainable)
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, device=device, dtype=torch.float32) / dim))
        self.register_buffer("inv_freq", inv_freq)
        self.scale_base = scale_base
        scale = (
            (torch.arange(0, dim, 2, device=device, dtype=torch.float32) + 0.4 * dim) / (1.4 * dim)
            if scale_base > 0
            else None
        )
        self.register_buffer("scale", scale)

        self._seq_len_cached = 0
        self._cos_cached = None
        self._sin_cached = None
        self._cos_k_cached = None
        self._sin_k_cached = None

    def _update_cos_sin_cache(self, x, indexes):
        """x: (batch, seqlen, nheads, headdim) or (batch, seqlen, 3, nheads, headdim)"""
        if not isinstance(indexes, int):
            seqlen = indexes.max().item() + 1
        else:
            seqlen = indexes + 1  # eval_forward
        # Reset the tables if the sequence length has changed,
        # or if we're on a new device (possibly due to tracing for instance)
        if seqlen > self._seq_len_cached or self._cos_cached.device != x.device or self._cos_cached.dtype != x.dtype:
            self._seq_len_cached = seqlen
            t = torch.arange(seqlen, device=x.device, dtype=self.inv_freq.dtype)
            # Don't do einsum, it converts fp32 to fp16
            # freqs = torch.einsum("i,j->ij", t, self.inv_freq)
            freqs = torch.outer(t, self.inv_freq.to(device=t.device))
            if self.scale is None:
                self._cos_cached = torch.cos(freqs).to(x.dtype)
                self._sin_cached = torch.sin(freqs).to(x.dtype)
            else:
                power = (
                    torch.arange(seqlen, dtype=self.scale.dtype, device=self.scale.device) - seqlen // 2
                ) / self.scale_base
                scale = self.scale.to(device=power.device) ** power.unsqueeze(1)
                # We want the multiplication by scale to happen in fp32
                self._cos_cached = (torch.cos(freqs) * scale).to(x.dtype)
                self._sin_cached = (torch.sin(freqs) * scale).to(x.dtype)
                self._cos_k_cached = (torch.cos(freqs) / scale).to(x.dtype)
                self._sin_k_cached = (torch.sin(freqs) / scale).to(x.dtype)

    def forward(self, qkv: torch.Tensor, **kwargs):
        if kwargs.get("indexes", None) is not None:
            return self._forward(qkv, kwargs.pop("indexes"))
        if kwargs.get("inference_params", None) is not None:
            return self._eval_forward(qkv, seqlen_offset=kwargs.get("inference_params", None).sequence_len_offset)
        else:
            return self._eval_forward(qkv)

    def _forward(self, qkv: torch.Tensor, indexes=0) -> Tuple[torch.Tensor, torch.Tensor]:
        self._update_cos_sin_cache(qkv, indexes)
        if self.scale is None:
            return apply_rotary_emb_qkv_(qkv, self._cos_cached[indexes], self._sin_cached[indexes])
        else:
            return apply_rotary_emb_qkv_(
                qkv,
                self._cos_cached[indexes],
                self._sin_cached[indexes],
                self._cos_k_cached[indexes],
                self._sin_k_cached[indexes],
            )

    def _eval_forward(self, qkv, seqlen_offset=0):
        raise NotImplementedError("eval path uses flash-attn's legacy kernel")


class MHA(nn.Module):
    def __init__(self, embed_dim, num_heads, rotary_emb_dim=0, rotary_emb_scale_base=0):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = self.embed_dim // num_heads
        self.rotary_emb_dim = rotary_emb_dim
        if self.rotary_emb_dim > 0:
            self.rotary_emb = RotaryEmbedding(self.rotary_emb_dim, scale_base=rotary_emb_scale_base)
        self.Wqkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x, seqlen=None, inference_params=None, **kwargs):
        if kwargs.get("indexes", None) is not None:
            return self._packed_forward(x=x, inference_params=inference_params, **kwargs)
        raise NotImplementedError("only the packed path is kept")

    def _packed_forward(self, x, inference_params=None, **kwargs):
        qkv = self.Wqkv(x)  # total x hsz'
        qkv = qkv.view(-1, 3, self.num_heads, self.head_dim)  # total x 3 x n_head x d
        qkv = self.rotary_emb(qkv, **kwargs)
        kwargs.pop("indexes")
        cu_seqlens = kwargs["cu_seqlens"]
        q, k, v = qkv.unbind(1)
        scores = torch.einsum("qhd,khd->hqk", q, k) / self.head_dim ** 0.5
        # tokens of different packed samples never attend to each other
        seq_id = torch.searchsorted(cu_seqlens[1:], torch.arange(x.shape[0]), right=True)
        same = seq_id[:, None] == seq_id[None, :]
        causal = torch.ones_like(same).tril()
        scores = scores.masked_fill(~(same & causal), float("-inf"))
        context = torch.einsum("hqk,khd->qhd", F.softmax(scores, dim=-1), v)
        return self.out_proj(context.reshape(x.shape[0], -1))


class PackedFlashBaseLayer1D(nn.Module):
    def __init__(self, hidden_size=8, num_attention_heads=2, rotary_emb_dim=4, rotary_emb_scale_base=512):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden_size)
        self.mixer = MHA(hidden_size, num_attention_heads, rotary_emb_dim=rotary_emb_dim,
                         rotary_emb_scale_base=rotary_emb_scale_base)

    def forward(self, hidden_states, cu_seqlens=None, indexes=None, inference_params=None, max_seqlen=None):
        mixer_kwargs = {
            "cu_seqlens": cu_seqlens,
            "max_seqlen": max_seqlen,
            "indexes": indexes,
            "inference_params": inference_params,
        }
        residual = hidden_states
        hidden_states = self.norm1(hidden_states.float())
        hidden_states = self.mixer(hidden_states, **mixer_kwargs)
        return hidden_states + residual


layer = torch.compile(PackedFlashBaseLayer1D())


def make():
    torch.manual_seed(0)
    layer = PackedFlashBaseLayer1D()
    x = torch.randn(6, 8)
    cu_short = torch.tensor([0, 3, 6])
    idx_short = torch.tensor([0, 1, 2, 0, 1, 2])
    cu_long = torch.tensor([0, 6])
    idx_long = torch.arange(6)
    return layer, [(x, cu_short, idx_short), (x, cu_long, idx_long)]
