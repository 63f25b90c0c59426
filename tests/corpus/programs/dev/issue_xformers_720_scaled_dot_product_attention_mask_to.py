"""xformers ScaledDotProduct (causal) compiled: AttentionMask wrapping, `.to(dtype, device)` asserts, crop, dense path.

Source: https://github.com/facebookresearch/xformers/issues/720 (facebookresearch/xformers components/attention/attention_mask.py@79cdac9e,
scaled_dot_product.py, core.py@0bf77476, the v0.0.18-era layout)
Kept: AttentionMask (from_bool / make_causal / make_crop / __add__ / `to` with its isinstance asserts and the
no-op shortcut), ScaledDotProduct.forward (tensor -> AttentionMask conversion, the deferred causal mask, the
merge, the shorter-sequence crop with its logger.error / NotImplementedError side) and the dense core path
(scaled_query_key_softmax, _matmul_with_mask with the bool / additive / batch-repeat branches, _softmax,
_apply_dropout, bmm); the issue's `ScaledDotProduct(0.1, True, seq_len, seq_len)` compiled with `torch.compile`.
Simplified: the sparse, triton and blocksparse availability flags are False (CPU build), so their branches
are kept where cheap but never taken (the SparseCS isinstance checks are dropped, SparseCS does not exist
without the C++ build); `@register_attention` and the config dataclass are dropped; CPU, sizes
shrunk.
"""
import logging
import math
from contextlib import nullcontext
from typing import Optional

import torch
from torch import nn

logger = logging.getLogger("xformers")

_is_sparse_available = False
_is_blocksparse_available = False


def _is_triton_available():
    return False


class AttentionMask:
    def __init__(self, additive_mask: torch.Tensor, is_causal: bool = False):
        assert additive_mask.is_floating_point(), additive_mask.dtype
        assert not additive_mask.requires_grad

        if additive_mask.ndim == 2:
            additive_mask = additive_mask.unsqueeze(0)

        self.values = additive_mask
        self.is_causal = is_causal
        self.seq_len = additive_mask.shape[1]
        self.to_seq_len = additive_mask.shape[0]

    def to_bool(self) -> torch.Tensor:
        return self.values != float("-inf")

    @classmethod
    def from_bool(cls, x: torch.Tensor):
        assert x.dtype == torch.bool

        additive_mask = torch.empty_like(x, dtype=torch.float, device=x.device)
        additive_mask.masked_fill_(x, 0.0)
        additive_mask.masked_fill_(~x, float("-inf"))

        return cls(additive_mask)

    @classmethod
    def make_causal(cls, seq_len, to_seq_len=None, device=None, dtype=None):
        if not to_seq_len:
            to_seq_len = seq_len

        additive_mask = torch.triu(
            torch.ones(seq_len, to_seq_len, device=device, dtype=dtype) * float("-inf"),
            diagonal=1,
        )
        return cls(additive_mask=additive_mask, is_causal=True)

    def make_crop(self, seq_len: int, to_seq_len: Optional[int] = None) -> "AttentionMask":
        if not to_seq_len:
            to_seq_len = seq_len

        return AttentionMask(self.values[:, :seq_len, :to_seq_len], is_causal=self.is_causal)

    @property
    def device(self):
        return self.values.device

    @property
    def is_sparse(self):
        return False

    @property
    def ndim(self):
        return len(self.values.shape)

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def shape(self):
        return self.values.shape

    def __add__(self, other):
        assert isinstance(other, type(self))
        return AttentionMask(self.values + other.values, is_causal=False)

    def to(self, device: Optional[torch.device] = None, dtype: Optional[torch.dtype] = None) -> "AttentionMask":
        assert device is None or isinstance(device, torch.device)
        assert dtype is None or isinstance(dtype, torch.dtype)
        assert device is not None or dtype is not None

        # Noop if we don't need to create another instance
        if ((device and device == self.device) or not device) and ((dtype and dtype == self.dtype) or not dtype):
            return self

        return AttentionMask(self.values.to(device=device, dtype=dtype), self.is_causal)


def _matmul_with_mask(a, b, mask):
    if mask is None:
        return a @ b

    if _is_sparse_available and mask.dtype == torch.bool:
        raise NotImplementedError  # sparse kernels are not built here

    att = a @ b
    if mask.dtype == torch.bool:
        if mask.ndim == 2:
            mask = mask.unsqueeze(0).expand(att.shape[0], -1, -1)
        # mask is presumed false == ignore
        att[~mask] = float("-inf")
    else:
        # mask is presumed additive
        # repeat if batch sizes don't match
        if mask.ndim == 3 and mask.shape[0] != att.shape[0] and (att.shape[0] % mask.shape[0]) == 0:
            repeat_factor = att.shape[0] // mask.shape[0]
            mask = mask.repeat([repeat_factor, 1, 1])
            logger.info("Mismatched batch dimensions for mask, repeating mask.")
        att += mask
    return att


def _softmax(a: torch.Tensor, causal: bool = False) -> torch.Tensor:
    if a.is_sparse:
        return torch.sparse.softmax(a, dim=a.ndim - 1)

    if _is_triton_available():
        raise NotImplementedError  # triton softmax is not available on CPU
    else:
        return torch.softmax(a, dim=a.ndim - 1)


def bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b


def _apply_dropout(att, dropout):
    if dropout is None:
        return att

    # Non optimized vanilla dropout
    att = dropout(att)
    return att


def scaled_query_key_softmax(q, k, att_mask):
    # Self-attend: (N, S, hs) x (N, hs, S) -> (N, S, S)
    q = q / math.sqrt(k.size(-1))

    # Matmul with mask
    if att_mask is not None and isinstance(att_mask, AttentionMask):
        # Additive mask
        mask = att_mask.values
    else:
        mask = att_mask

    att = _matmul_with_mask(q, k.transpose(-2, -1), mask)

    # Softmax to get the attention probabilities
    is_causal = isinstance(att_mask, AttentionMask) and att_mask.is_causal
    att = _softmax(att, causal=is_causal)
    return att


def scaled_dot_product_attention(q, k, v, att_mask, dropout=None, block_size=128):
    autocast_disabled = att_mask is not None and att_mask.is_sparse
    seq_len = q.shape[-2]

    switch_to_blocksparse = (
        _is_blocksparse_available
        and (att_mask is not None and not att_mask.is_sparse)
        and (isinstance(att_mask, AttentionMask) and att_mask.is_causal)
        and (q.dtype == torch.float16 or torch.is_autocast_enabled())
        and not seq_len % block_size
        and q.shape[-2] == k.shape[-2]
    )

    if switch_to_blocksparse:
        logger.info("Switching causal attention to Triton blocksparse...")
        raise NotImplementedError

    with torch.autocast("cpu", enabled=False) if autocast_disabled else nullcontext():
        if autocast_disabled:
            q, k, v = q.float(), k.float(), v.float()

        att = scaled_query_key_softmax(q, k, att_mask=att_mask)

        #  Optional dropout, could be part of the masking in the future
        att = _apply_dropout(att, dropout)

        # Get to the predicted values, for all heads
        y = bmm(att, v)
    return y


class ScaledDotProduct(nn.Module):
    def __init__(self, dropout=0.0, causal=False, seq_len=None, to_seq_len=None, *args, **kwargs):
        super().__init__()

        self.attn_drop = nn.Dropout(dropout, inplace=False)
        self.causal = causal
        self.seq_len = seq_len

        if causal and seq_len is not None:
            self.mask = AttentionMask.make_causal(seq_len, to_seq_len)
        else:
            self.mask = None

        # Properties specific to this attention mechanism
        self.supports_attention_mask = True
        self.supports_key_padding_mask = False

    def forward(self, q, k, v, att_mask=None, *args, **kwargs):
        # Convenience, create an attention mask if a tensor was passed
        if att_mask is not None and isinstance(att_mask, torch.Tensor):
            # By default we don't know of the causality, and a check would be expensive
            att_mask = (
                AttentionMask.from_bool(att_mask)
                if att_mask.dtype == torch.bool
                else AttentionMask(att_mask, is_causal=False)
            )

        # Handle a possibly deferred causal mask handling
        mask = self.mask
        if self.causal and self.mask is None:
            mask = AttentionMask.make_causal(
                seq_len=q.shape[-2],
                to_seq_len=q.shape[-2],
                device=q.device,
                dtype=q.dtype,
            )

        # Merge the optional causal mask and the user-provided mask
        if mask is not None:
            mask = mask.to(dtype=q.dtype, device=q.device)

            att_mask = att_mask + mask if att_mask is not None else mask

        # Try to handle a case where the sequence is smaller than the mask
        if att_mask is not None and q.shape[-2] == k.shape[-2] and q.shape[-2] < att_mask.shape[1]:
            if isinstance(att_mask, AttentionMask):
                att_mask = att_mask.make_crop(seq_len=q.shape[-2])
            else:
                logger.error(
                    "Mismatching sparse attention mask and sequence length."
                    + " Please pad the inputs or adjust the attention mask"
                )
                raise NotImplementedError

        # Attend: (B x nh, S, hs) x (B x nh, hs, S) -> (B x nh, S, S)
        y = scaled_dot_product_attention(q=q, k=k, v=v, att_mask=att_mask, dropout=self.attn_drop)
        return y


batch_size = 3
seq_len = 10
model_dim = 4


def main():
    sdp = ScaledDotProduct(0.1, True, seq_len, seq_len)
    q, k, v = [torch.randn(batch_size, seq_len, model_dim) for _ in range(3)]
    mask = torch.rand(10, 10).round().bool()
    sdp = torch.compile(sdp)  # works without this line
    return sdp(q, k, v, att_mask=mask)


def make():
    torch.manual_seed(0)
    sdp = ScaledDotProduct(0.1, True, seq_len, seq_len)
    q, k, v = [torch.randn(batch_size, seq_len, model_dim) for _ in range(3)]
    bool_mask = torch.rand(10, 10).round().bool()
    bool_mask |= torch.eye(10, dtype=torch.bool)
    additive_mask = torch.zeros(batch_size, seq_len, seq_len).masked_fill(~bool_mask, float("-inf"))
    short = [t[:, :6] for t in (q, k, v)]
    return sdp, [(q, k, v, bool_mask), (q, k, v, additive_mask), (q, k, v), tuple(short)]
