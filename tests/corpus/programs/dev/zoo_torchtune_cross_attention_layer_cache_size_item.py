"""torchtune TransformerCrossAttentionLayer: `self.attn.kv_cache.size == 0` reads `cache_pos[0].item()` to decide whether a decode step without encoder input can skip the layer.

Source: pytorch/torchtune@bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1:torchtune/modules/transformer.py:150-320
Also: torchtune/modules/kv_cache.py:12-110 (KVCache, the `size` property and
update), torchtune/modules/attention.py:100-340 (MultiHeadAttention.setup_cache,
forward with `y is None` reading the cache), torchtune/training/_compile.py
(compile_model, which compiles each cross-attention layer).
Kept: the layer's caches_are_enabled/_skip_mask/forward as written, KVCache
update's batch-size ValueError and capacity assert, MultiHeadAttention's
cross-attention path with GQA expansion and the setup_cache warning.
Simplified: no positional embeddings or q/k norms, `_attention_call` is
F.scaled_dot_product_attention, no tanh gates; the compiled entry is a
function stepping one layer (the harness passes positional inputs, the
layer's arguments are keyword-only); dim 8, 2 heads, encoder cache of 16.
"""
import logging
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)


class KVCache(nn.Module):
    def __init__(self, batch_size: int, max_seq_len: int, num_kv_heads: int, head_dim: int, dtype: torch.dtype) -> None:
        super().__init__()
        cache_shape = (batch_size, num_kv_heads, max_seq_len, head_dim)
        self.register_buffer("k_cache", torch.zeros(cache_shape, dtype=dtype), persistent=False)
        self.register_buffer("v_cache", torch.zeros(cache_shape, dtype=dtype), persistent=False)
        self.register_buffer("cache_pos", torch.arange(0, cache_shape[2]), persistent=False)
        self.batch_size = batch_size

    def reset(self) -> None:
        """Reset the cache to zero."""
        self.k_cache.zero_()
        self.v_cache.zero_()
        self.cache_pos -= self.size

    @property
    def size(self) -> int:
        return self.cache_pos[0].item()

    def update(self, k_val: torch.Tensor, v_val: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        bsz, _, seq_len, _ = k_val.shape
        if bsz > self.k_cache.shape[0]:
            raise ValueError(
                f"The current cache has been setup with a batch size of {self.k_cache.shape[0]}"
                f", but found new key tensors with batch size {k_val.shape[0]}!"
            )

        assert (self.cache_pos[0] + seq_len) <= self.k_cache.shape[2]
        k_out = self.k_cache
        v_out = self.v_cache

        k_out[:, :, self.cache_pos[:seq_len]] = k_val
        v_out[:, :, self.cache_pos[:seq_len]] = v_val

        # forward cache_pos seq_len positions along
        self.cache_pos.add_(seq_len)

        return k_out, v_out


class MultiHeadAttention(nn.Module):
    def __init__(self, *, embed_dim: int, num_heads: int, num_kv_heads: int, head_dim: int, q_proj: nn.Module,
                 k_proj: nn.Module, v_proj: nn.Module, output_proj: nn.Module, is_causal: bool = True,
                 attn_dropout: float = 0.0) -> None:
        super().__init__()
        if num_heads % num_kv_heads != 0:
            raise ValueError(
                f"num_heads ({num_heads}) must be divisible by "
                f"num_kv_heads ({num_kv_heads})"
            )
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads
        self.embed_dim = embed_dim
        self.attn_dropout = attn_dropout
        self.head_dim = head_dim
        self.is_causal = is_causal
        self.kv_cache = None
        self.q_proj = q_proj
        self.k_proj = k_proj
        self.v_proj = v_proj
        self.output_proj = output_proj
        self.cache_enabled = False

    def setup_cache(self, batch_size: int, dtype: torch.dtype, max_seq_len: int) -> None:
        # Don't overwrite user defined kv_cache from init
        if self.kv_cache is not None:
            logger.warning(
                "Key value caches are already setup. You cannot call ``setup_caches()`` twice. Skipping."
            )
        else:
            self.kv_cache = KVCache(
                batch_size=batch_size,
                max_seq_len=max_seq_len,
                num_kv_heads=self.num_kv_heads,
                head_dim=self.head_dim,
                dtype=dtype,
            )
            self.cache_enabled = True

    def forward(self, x: torch.Tensor, y: Optional[torch.Tensor] = None, *, mask=None, input_pos=None) -> torch.Tensor:
        # x has shape [b, s_x, d]
        # y has shape [b, s_y, d]
        b, s_x, _ = x.shape
        s_y = y.shape[1] if y is not None else 0

        # q has shape [b, s_x, num_heads * head_dim]
        q = self.q_proj(x)

        # number of queries per key/value
        q_per_kv = self.num_heads // self.num_kv_heads
        q = q.view(b, s_x, self.num_kv_heads * q_per_kv, self.head_dim)
        q = q.transpose(1, 2)

        if y is None:
            if self.kv_cache is None or not self.cache_enabled:
                raise ValueError(
                    "Must provide y input or use kv_cache to enable streaming decoding"
                )
            k = self.kv_cache.k_cache
            v = self.kv_cache.v_cache
        else:
            # Update k and v shape, positional embeddings, and normalization
            k = self.k_proj(y)
            v = self.v_proj(y)
            k = k.view(b, s_y, -1, self.head_dim)
            v = v.view(b, s_y, -1, self.head_dim)
            k = k.transpose(1, 2)
            v = v.transpose(1, 2)

            # Update key-value cache
            if self.kv_cache is not None and self.cache_enabled:
                k, v = self.kv_cache.update(k, v)

        # If needed, expand the key and value tensors to have the same shape
        # as the query tensor by copying values across the relevant dim
        if self.num_heads != self.num_kv_heads:
            expand_shape = (b, self.num_kv_heads, q_per_kv, -1, self.head_dim)
            k = k.unsqueeze(2).expand(expand_shape).flatten(1, 2)
            v = v.unsqueeze(2).expand(expand_shape).flatten(1, 2)

        if mask is not None:
            mask = mask[:, None, :, :]
        output = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=mask,
            dropout_p=self.attn_dropout if self.training else 0.0,
            is_causal=self.kv_cache is None and mask is None and self.is_causal,
        )

        # reshape the output to be the same shape as the input
        output = output.transpose(1, 2).contiguous().view(b, s_x, -1)
        return self.output_proj(output)


class TransformerCrossAttentionLayer(nn.Module):
    def __init__(self, attn: MultiHeadAttention, mlp: nn.Module, *, ca_norm: Optional[nn.Module] = None,
                 mlp_norm: Optional[nn.Module] = None, ca_scale: Optional[nn.Module] = None,
                 mlp_scale: Optional[nn.Module] = None) -> None:
        super().__init__()
        if attn.pos_embeddings if hasattr(attn, "pos_embeddings") else None:
            raise AssertionError("Doesn't support positional embeddings for cross attention, because q and k are different sequences.")
        self.attn = attn
        self.mlp = mlp
        self.ca_norm = ca_norm or nn.Identity()
        self.mlp_norm = mlp_norm or nn.Identity()
        self.ca_scale = ca_scale or nn.Identity()
        self.mlp_scale = mlp_scale or nn.Identity()

    def setup_caches(self, batch_size: int, dtype: torch.dtype, *, encoder_max_seq_len: int, decoder_max_seq_len: int) -> None:
        self.attn.setup_cache(batch_size, dtype, encoder_max_seq_len)

    def caches_are_setup(self) -> bool:
        return self.attn.kv_cache is not None

    def caches_are_enabled(self) -> bool:
        return self.attn.cache_enabled

    def reset_cache(self):
        """Reset the key value caches."""
        self.attn.reset_cache()

    def _skip_mask(self, mask: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
        # no skip_mask if no masking
        if mask is None:
            return None
        # negate mask and convert to boolean mask
        if mask.dtype == torch.bool:
            mask = ~mask
        else:
            mask = torch.isneginf(mask)
        # True where all elements in a row are True
        mask = torch.all(mask, dim=-1, keepdim=True)
        return mask

    def forward(self, x: torch.Tensor, *, encoder_input: Optional[torch.Tensor] = None,
                encoder_mask: Optional[torch.Tensor] = None, **kwargs: dict) -> torch.Tensor:
        # During decoding, it's possible encoder_input is None because the embeds
        # are already stored in the kv cache.
        empty_cache = not self.caches_are_enabled() or self.attn.kv_cache.size == 0
        # Skip cross attention when no secondary input as it's primary purpose
        # is to attend between x and encoder_input.
        if encoder_input is None and empty_cache:
            return x

        # A mask of tokens (x) with no encoder_input
        skip_mask = self._skip_mask(encoder_mask)
        if encoder_mask is not None:
            # This unmasks the skipped rows to avoid NaNs in SDPA Softmax backward
            # This doesn't affect the output since outputs are masked out later
            encoder_mask = encoder_mask.masked_fill(skip_mask, True)

        # Input tensor and attention output have the same shape
        # [b, s, d]
        # Norm applied before self-attention
        attn_out = self.attn(self.ca_norm(x), encoder_input, mask=encoder_mask)
        if skip_mask is not None:
            attn_out = attn_out.masked_fill(skip_mask, 0)

        # Residual connection; shape: [batch_size, seq_length, embed_dim]
        h = self.ca_scale(attn_out) + x

        # Norm applied before the feedforward layer
        mlp_out = self.mlp(self.mlp_norm(h))
        if skip_mask is not None:
            mlp_out = mlp_out.masked_fill(skip_mask, 0)

        # Residual connection; shape: [batch_size, seq_length, embed_dim]
        out = h + self.mlp_scale(mlp_out)
        return out


def cross_attention_layer(dim=8, num_heads=2, num_kv_heads=1):
    head_dim = dim // num_heads
    attn = MultiHeadAttention(
        embed_dim=dim, num_heads=num_heads, num_kv_heads=num_kv_heads, head_dim=head_dim,
        q_proj=nn.Linear(dim, num_heads * head_dim, bias=False),
        k_proj=nn.Linear(dim, num_kv_heads * head_dim, bias=False),
        v_proj=nn.Linear(dim, num_kv_heads * head_dim, bias=False),
        output_proj=nn.Linear(dim, dim, bias=False),
        is_causal=False,
    )
    mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.SiLU(), nn.Linear(2 * dim, dim))
    return TransformerCrossAttentionLayer(attn, mlp, ca_norm=nn.RMSNorm(dim), mlp_norm=nn.RMSNorm(dim))


@torch.compile(backend="inductor")
def cross_attend(layer, x, encoder_input=None, encoder_mask=None):
    """One fused decoder step as an inference script drives it, layer by layer."""
    return layer(x, encoder_input=encoder_input, encoder_mask=encoder_mask)


def make():
    torch.manual_seed(0)
    layer = cross_attention_layer()
    layer.setup_caches(1, torch.float32, encoder_max_seq_len=16, decoder_max_seq_len=8)
    layer.eval()
    x = torch.randn(1, 3, 8)
    encoder_input = torch.randn(1, 4, 8)
    encoder_mask = torch.zeros(1, 3, 16, dtype=torch.bool)
    encoder_mask[:, 1:, :4] = True  # the first text token sees no image
    step_mask = torch.zeros(1, 1, 16, dtype=torch.bool)
    step_mask[:, :, :4] = True
    prefilled = cross_attention_layer()
    prefilled.setup_caches(1, torch.float32, encoder_max_seq_len=16, decoder_max_seq_len=8)
    prefilled.eval()
    with torch.no_grad():
        prefilled(x, encoder_input=encoder_input, encoder_mask=encoder_mask)  # the prompt step filled the cache
    return cross_attend._torchdynamo_orig_callable, [
        (layer, x),
        (layer, x, encoder_input, encoder_mask),
        (prefilled, x[:, -1:], None, step_mask),
    ]
