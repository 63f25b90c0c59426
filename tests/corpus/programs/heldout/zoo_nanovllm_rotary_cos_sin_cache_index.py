"""nano-vllm RotaryEmbedding: `@torch.compile`d forward gathering a cos/sin cache by positions.

Source: GeeeekExplorer/nano-vllm@c7fca9f49443984db9febbaa18023b9472bfdf1b:nanovllm/layers/rotary_embedding.py:1-97
Kept: `apply_rotary_emb` (chunk, float math, cast back), the module building
`cos_sin_cache` with einsum and `unsqueeze_(1)` as a non-persistent buffer,
the `@torch.compile` on `forward`, indexing the cache with the flat
`positions` tensor, and `get_rope` with `_normalize_rope_scaling` and the
`lru_cache`d constructor.
Simplified: head size 8, 2 heads, 32 positions.
"""
from functools import lru_cache
import torch
from torch import nn


def apply_rotary_emb(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
) -> torch.Tensor:
    x1, x2 = torch.chunk(x.float(), 2, dim=-1)
    y1 = x1 * cos - x2 * sin
    y2 = x2 * cos + x1 * sin
    return torch.cat((y1, y2), dim=-1).to(x.dtype)


class RotaryEmbedding(nn.Module):

    def __init__(
        self,
        head_size: int,
        rotary_dim: int,
        max_position_embeddings: int,
        base: float,
    ) -> None:
        super().__init__()
        self.head_size = head_size
        assert rotary_dim == head_size
        inv_freq = 1.0 / (base**(torch.arange(0, rotary_dim, 2, dtype=torch.float) / rotary_dim))
        t = torch.arange(max_position_embeddings, dtype=torch.float)
        freqs = torch.einsum("i,j -> ij", t, inv_freq)
        cos = freqs.cos()
        sin = freqs.sin()
        cache = torch.cat((cos, sin), dim=-1).unsqueeze_(1)
        self.register_buffer("cos_sin_cache", cache, persistent=False)

    @torch.compile
    def forward(
        self,
        positions: torch.Tensor,
        query: torch.Tensor,
        key: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        cos_sin = self.cos_sin_cache[positions]
        cos, sin = cos_sin.chunk(2, dim=-1)
        query = apply_rotary_emb(query, cos, sin)
        key = apply_rotary_emb(key, cos, sin)
        return query, key


def _normalize_rope_scaling(
    rope_scaling: dict | None,
) -> None:
    if rope_scaling is None:
        return None
    rope_type = rope_scaling.get("rope_type", rope_scaling.get("type"))
    if rope_type == "default":
        return None
    if rope_type is None and set(rope_scaling).issubset({"rope_theta"}):
        return None
    raise NotImplementedError(
        f"Unsupported rope_scaling={rope_scaling!r}. "
        "nano-vllm only supports default RoPE without scaling."
    )


@lru_cache(1)
def _get_rope(
    head_size: int,
    rotary_dim: int,
    max_position: int,
    base: float,
    rope_scaling: None = None,
):
    rotary_emb = RotaryEmbedding(head_size, rotary_dim, max_position, base)
    return rotary_emb


def get_rope(
    head_size: int,
    rotary_dim: int,
    max_position: int,
    base: float,
    rope_scaling: dict | None = None,
):
    rope_scaling = _normalize_rope_scaling(rope_scaling)
    return _get_rope(head_size, rotary_dim, max_position, base, rope_scaling)


def make():
    torch.manual_seed(0)
    rope = get_rope(8, 8, 32, 10000.0, {"rope_type": "default"})
    # prefill: flattened tokens of two sequences; decode: one token each
    positions_prefill = torch.tensor([0, 1, 2, 3, 0, 1, 2])
    q1 = torch.randn(7, 2, 8)
    k1 = torch.randn(7, 2, 8)
    positions_decode = torch.tensor([4, 3])
    q2 = torch.randn(2, 2, 8)
    k2 = torch.randn(2, 2, 8)
    return RotaryEmbedding.forward._torchdynamo_orig_callable, [
        (rope, positions_prefill, q1, k1),
        (rope, positions_decode, q2, k2),
    ]
