"""OLMo RotaryEmbedding: sin/cos tables live in a BufferCache (a dict subclass held as the name-mangled `self.__cache`), looked up with walrus `.get` tests on cached shapes, rebuilt under `torch.autocast(..., enabled=False)` when the key length outgrows them; queries shorter than keys slice `key_len - query_len : key_len`.

Source: allenai/OLMo@59a53e3f68e546330ca5a99ec626e58f9ab96494:olmo/model.py:108-128,258-324
Kept: BufferCache, _non_meta_init_device and RotaryEmbedding verbatim
(cache warm-up in __init__, get_rotary_embedding, rotate_half,
apply_rotary_pos_emb, forward with rope_full_precision).
Simplified: ModelConfig is a small dataclass with the fields these read;
the attention around it is a fused qkv Linear that splits heads, with the
key/value of a previous chunk concatenated in front (layer_past).
"""
from dataclasses import dataclass
from typing import MutableMapping, Optional, Tuple

import torch
import torch.nn as nn
from torch import einsum


@dataclass
class ModelConfig:
    d_model: int = 16
    n_heads: int = 2
    max_sequence_length: int = 6
    rope_theta: int = 10_000
    rope_full_precision: bool = True
    init_device: Optional[str] = "cpu"


class BufferCache(dict, MutableMapping[str, torch.Tensor]):
    """
    Cache for attention biases and other things that would normally be stored as buffers.
    We avoid using buffers because we've run into various issues doing so with FSDP.
    In general it appears the way FSDP handles buffers is not well-defined.
    It doesn't shard them but apparently it does synchronize them across processes, which we want to avoid
    since (A) it isn't necessary, and (B) we sometimes have `-inf` in these biases which might get turned into
    NaNs when they're synchronized due to casting or some other issue.
    """


def _non_meta_init_device(config: ModelConfig) -> torch.device:
    if config.init_device is not None and config.init_device != "meta":
        return torch.device(config.init_device)
    else:
        if torch.backends.mps.is_available():
            return torch.device("mps")
        elif torch.cuda.is_available():
            return torch.device("cuda")
        else:
            return torch.device("cpu")


class RotaryEmbedding(nn.Module):
    """
    [Rotary positional embeddings (RoPE)](https://arxiv.org/abs/2104.09864).
    """

    def __init__(self, config: ModelConfig, cache: BufferCache):
        super().__init__()
        self.config = config
        self.__cache = cache
        # Warm up cache.
        self.get_rotary_embedding(config.max_sequence_length, _non_meta_init_device(config))

    def get_rotary_embedding(self, seq_len: int, device: torch.device) -> Tuple[torch.Tensor, torch.Tensor]:
        if (
            (pos_sin := self.__cache.get("rope_pos_sin")) is not None
            and (pos_cos := self.__cache.get("rope_pos_cos")) is not None
            and pos_sin.shape[-2] >= seq_len
            and pos_cos.shape[-2] >= seq_len
        ):
            if pos_sin.device != device:
                pos_sin = pos_sin.to(device)
                self.__cache["rope_pos_sin"] = pos_sin
            if pos_cos.device != device:
                pos_cos = pos_cos.to(device)
                self.__cache["rope_pos_cos"] = pos_cos
            return pos_sin[:, :, :seq_len, :], pos_cos[:, :, :seq_len, :]

        with torch.autocast(device.type, enabled=False):
            dim = self.config.d_model // self.config.n_heads
            inv_freq = 1.0 / (
                self.config.rope_theta ** (torch.arange(0, dim, 2, device=device, dtype=torch.float) / dim)
            )
            seq = torch.arange(seq_len, device=device, dtype=torch.float)
            freqs = einsum("i , j -> i j", seq, inv_freq)
            positions = torch.cat((freqs, freqs), dim=-1)
            pos_sin, pos_cos = positions.sin()[None, None, :, :], positions.cos()[None, None, :, :]
        self.__cache["rope_pos_sin"] = pos_sin
        self.__cache["rope_pos_cos"] = pos_cos
        return pos_sin, pos_cos

    def rotate_half(self, x: torch.Tensor) -> torch.Tensor:
        B, nh, T, hs = x.size()
        x = x.view(B, nh, T, 2, hs // 2)
        x1, x2 = x.unbind(dim=-2)
        return torch.cat((-x2, x1), dim=-1)

    def apply_rotary_pos_emb(self, pos_sin: torch.Tensor, pos_cos: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return ((t * pos_cos) + (self.rotate_half(t) * pos_sin)).to(t.dtype)

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        if self.config.rope_full_precision:
            q_, k_ = q.float(), k.float()
        else:
            q_, k_ = q, k

        with torch.autocast(q.device.type, enabled=False):
            query_len, key_len = q_.shape[-2], k_.shape[-2]  # could be different if layer_past not None
            pos_sin, pos_cos = self.get_rotary_embedding(key_len, q_.device)
            pos_sin = pos_sin.type_as(q_)
            pos_cos = pos_cos.type_as(q_)
            q_ = self.apply_rotary_pos_emb(
                pos_sin[:, :, key_len - query_len : key_len, :],
                pos_cos[:, :, key_len - query_len : key_len, :],
                q_,
            )
            k_ = self.apply_rotary_pos_emb(pos_sin, pos_cos, k_)
        return q_.type_as(q), k_.type_as(k)


class RopeAttentionScores(nn.Module):
    """The q/k path of OLMoBlock.attention with a layer_past (olmo/model.py:590-630)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.__cache = BufferCache()
        self.att_proj = nn.Linear(config.d_model, 2 * config.d_model, bias=False)
        self.rotary_emb = RotaryEmbedding(config, self.__cache)

    def forward(self, x: torch.Tensor, layer_past: Optional[torch.Tensor] = None) -> torch.Tensor:
        B, T, C = x.size()
        q, k = self.att_proj(x).split(C, dim=-1)
        q = q.view(B, T, self.config.n_heads, C // self.config.n_heads).transpose(1, 2)
        k = k.view(B, T, self.config.n_heads, C // self.config.n_heads).transpose(1, 2)
        if layer_past is not None:
            k = torch.cat((layer_past, k), dim=-2)
        q, k = self.rotary_emb(q, k)
        return q @ k.transpose(-2, -1)


model = torch.compile(RopeAttentionScores(ModelConfig()))


def make():
    torch.manual_seed(0)
    m = RopeAttentionScores(ModelConfig())
    x = torch.randn(1, 4, 16)
    past = torch.randn(1, 2, 5, 8)
    return m, [(x,), (x[:, :1], past), (torch.randn(1, 9, 16),)]
