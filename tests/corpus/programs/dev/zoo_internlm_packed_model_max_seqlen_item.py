"""InternLM PackedFlashInternLm1D.forward on packed sequences: `cu_seqlens` may arrive as a one-element list, the batch dim is squeezed, and `max_seqlen = (cu_seqlens[1:] - cu_seqlens[:-1]).max().item()` is computed once and passed to every block through keyword arguments.

Source: InternLM/InternLM@0296425055c627400d31879bd5538313ef1b23af:internlm/model/modeling_internlm.py:36-420
Kept: PackedFlashBaseLayer1D.forward/_forward (mixer_kwargs, dropout,
residual_in_fp32, norm_fp32 handling) and PackedFlashInternLm1D.forward
(embed_grad_scale mixing, list cu_seqlens, squeeze, indexes[0], max_seqlen,
norm/head, parallel_output) verbatim; the constructor's layer/first/last
structure.
Simplified: single process (gpc stubs: tensor world size 1, norm_fp32
False); ParallelGPT2Embeddings / ScaleColumnParallelLinear / FeedForward
are nn.Embedding / nn.Linear / a SwiGLU of nn.Linear; RMSNorm is the torch
fallback; the MHA mixer is packed causal attention over `cu_seqlens`
(flash_attn_varlen's semantics written with a block mask, `max_seqlen`
accepted but unused as in the masked fallback); no checkpointing.
"""
import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states


class FeedForward(nn.Module):
    def __init__(self, in_features, hidden_features, out_features=None, bias=False):
        super().__init__()
        self.w1 = nn.Linear(in_features, hidden_features, bias=bias)
        self.w2 = nn.Linear(in_features, hidden_features, bias=bias)
        self.w3 = nn.Linear(hidden_features, out_features, bias=bias)

    def forward(self, x):
        return self.w3(F.silu(self.w1(x)) * self.w2(x))


class MHA(nn.Module):
    def __init__(self, embed_dim, num_heads, softmax_scale=None, causal=True):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.softmax_scale = softmax_scale
        self.causal = causal
        self.Wqkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x, seqlen=None, inference_params=None, **kwargs):
        if kwargs.get("indexes", None) is not None:
            return self._packed_forward(x=x, inference_params=inference_params, **kwargs)
        raise NotImplementedError("only the packed path is kept")

    def _packed_forward(self, x, inference_params=None, **kwargs):
        qkv = self.Wqkv(x).view(-1, 3, self.num_heads, self.head_dim)
        cu_seqlens = kwargs["cu_seqlens"]
        q, k, v = qkv.unbind(1)
        scores = torch.einsum("qhd,khd->hqk", q, k) * self.softmax_scale
        seq_id = torch.searchsorted(cu_seqlens[1:], torch.arange(x.shape[0]), right=True)
        allowed = seq_id[:, None] == seq_id[None, :]
        if self.causal:
            allowed = allowed & torch.ones_like(allowed).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
        context = torch.einsum("hqk,khd->qhd", F.softmax(scores, dim=-1), v)
        return self.out_proj(context.reshape(x.shape[0], -1))


class PackedFlashBaseLayer1D(nn.Module):
    def __init__(
        self,
        hidden_size: int = 768,
        num_attention_heads: int = 12,
        mlp_ratio: int = 4,
        drop_rate: float = 0.0,
        dtype: torch.dtype = torch.float,
        layer_norm_epsilon: float = 1e-6,
        checkpoint: bool = False,
        layer_idx: int = 0,
        residual_in_fp32: bool = False,
        norm_type: str = "rmsnorm",
    ):
        super().__init__()
        self.checkpoint = checkpoint
        self.layer_idx = layer_idx
        self.dtype = dtype
        self.norm_fp32 = False  # gpc.config.model.get("norm_fp32")

        head_dim = hidden_size // num_attention_heads
        self.mixer = MHA(embed_dim=hidden_size, num_heads=num_attention_heads,
                         softmax_scale=1 / math.sqrt(head_dim), causal=True)
        self.dropout1 = nn.Dropout(drop_rate)
        if norm_type == "rmsnorm":
            self.norm1 = RMSNorm(hidden_size, eps=layer_norm_epsilon)
            self.norm2 = RMSNorm(hidden_size, eps=layer_norm_epsilon)
        else:
            self.norm1 = nn.LayerNorm(hidden_size, eps=layer_norm_epsilon)
            self.norm2 = nn.LayerNorm(hidden_size, eps=layer_norm_epsilon)
        self.mlp = FeedForward(hidden_size, int(hidden_size * mlp_ratio), out_features=hidden_size, bias=False)
        self.dropout2 = nn.Dropout(drop_rate)
        self.residual_in_fp32 = residual_in_fp32  # only make sense when using prenorm

    def forward(self, hidden_states, cu_seqlens=None, indexes=None, inference_params=None, max_seqlen=None):
        return self._forward(hidden_states, cu_seqlens, indexes, inference_params, max_seqlen)

    def _forward(self, hidden_states=None, cu_seqlens=None, indexes=None, inference_params=None, max_seqlen=None):
        mixer_kwargs = {
            "cu_seqlens": cu_seqlens,
            "max_seqlen": max_seqlen,
            "indexes": indexes,
            "inference_params": inference_params,
        }

        dropped1 = self.dropout1(hidden_states)
        residual1 = dropped1
        hidden_states = self.norm1(residual1.float())

        if self.residual_in_fp32:
            residual1 = residual1.to(torch.float32)

        if self.norm_fp32:
            hidden_states = hidden_states.to(self.dtype)

        hidden_states = self.mixer(hidden_states, **mixer_kwargs)

        dropped2 = self.dropout2(hidden_states)
        residual2 = (dropped2 + residual1) if residual1 is not None else dropped2
        hidden_states = self.norm2(residual2.float())

        if self.residual_in_fp32:
            residual2 = residual2.to(torch.float32)

        if self.norm_fp32:
            hidden_states = hidden_states.to(self.dtype)

        hidden_states = self.mlp(hidden_states)

        return hidden_states + residual2


class PackedFlashInternLm1D(nn.Module):
    def __init__(
        self,
        num_layers: int = 12,
        hidden_size: int = 768,
        num_attention_heads: int = 12,
        vocab_size: int = 50304,
        mlp_ratio: int = 4.0,
        drop_rate: float = 0.0,
        dtype: torch.dtype = torch.float,
        layer_norm_epsilon: float = 1e-5,
        first: bool = False,
        last: bool = False,
        embed_grad_scale: float = 0.1,
        parallel_output: bool = True,
        start_layer_idx: int = 0,
        residual_in_fp32: bool = False,
        norm_type: str = "rmsnorm",
    ):
        super().__init__()
        if first:
            self.embedding = nn.Embedding(vocab_size, hidden_size)
        self.embed_grad_scale = embed_grad_scale
        self.blocks = nn.ModuleList(
            [
                PackedFlashBaseLayer1D(
                    hidden_size=hidden_size,
                    num_attention_heads=num_attention_heads,
                    mlp_ratio=mlp_ratio,
                    drop_rate=drop_rate,
                    dtype=dtype,
                    layer_norm_epsilon=layer_norm_epsilon,
                    layer_idx=lid + start_layer_idx,
                    residual_in_fp32=residual_in_fp32,
                    norm_type=norm_type,
                )
                for lid in range(num_layers)
            ]
        )
        if last:
            if norm_type == "rmsnorm":
                self.norm = RMSNorm(hidden_size, eps=layer_norm_epsilon)
            else:
                self.norm = nn.LayerNorm(hidden_size, eps=layer_norm_epsilon)
            self.head = nn.Linear(hidden_size, vocab_size, bias=False)
        self.parallel_output = parallel_output
        self.dtype = dtype
        self.norm_fp32 = False  # gpc.config.model.get("norm_fp32")

    def forward(self, hidden_states=None, cu_seqlens=None, input_ids=None, indexes=None, inference_params=None):
        # attention_mask: compute attention on the places where the value is 1
        if hasattr(self, "embedding"):
            hidden_states = self.embedding(input_ids)
            if self.embed_grad_scale != 1:
                hidden_states = (
                    self.embed_grad_scale * hidden_states + (1 - self.embed_grad_scale) * hidden_states.detach()
                )
        if isinstance(cu_seqlens, list):
            assert len(cu_seqlens) == 1
            cu_seqlens = cu_seqlens[0].to(hidden_states.device)

        if cu_seqlens is not None:
            cu_seqlens = cu_seqlens.squeeze(0)
            hidden_states = hidden_states.squeeze(0)  # If cu_seqlens is passed in，it indicated a packed state，
            # the batch dimension with a size of 1 should be directly squeezed off.

        if indexes is not None:
            assert len(indexes) == 1
            # The indexes are used to indicate the actual position IDs of each token in the packed input.
            indexes = indexes[0]
        max_seqlen = (cu_seqlens[1:] - cu_seqlens[:-1]).max().item() if cu_seqlens is not None else None

        for _, block in enumerate(self.blocks):
            hidden_states = block(
                hidden_states,
                cu_seqlens=cu_seqlens,
                indexes=indexes,
                inference_params=inference_params,
                max_seqlen=max_seqlen,
            )

        if hasattr(self, "norm"):
            hidden_states = self.norm(hidden_states.float())
        if hasattr(self, "head"):
            if self.norm_fp32:
                hidden_states = hidden_states.to(self.dtype)
            hidden_states = self.head(hidden_states)

        return hidden_states


def build_model():
    return PackedFlashInternLm1D(num_layers=2, hidden_size=8, num_attention_heads=2, vocab_size=16,
                                 mlp_ratio=2.0, first=True, last=True)


model = torch.compile(build_model())


def make():
    torch.manual_seed(0)
    input_ids = torch.randint(0, 16, (1, 7))
    cu = torch.tensor([[0, 3, 7]])
    indexes = torch.tensor([[0, 1, 2, 0, 1, 2, 3]])
    return build_model(), [
        (None, [cu], input_ids, indexes),
        (None, cu, input_ids, indexes),
    ]
