"""Llama dynamic-NTK RoPE: `if seq_len > max_seq_len_cached:` where seq_len = torch.max(position_ids) + 1.

Source: huggingface/transformers@v5.23.0:src/transformers/modeling_rope_utils.py:34-131
Kept: the `dynamic_rope_update` decorator with its inner dynamic_frequency_update
(growth branch with register_buffer/setattr, reset branch), the wrapper's
rope_type dispatch and a LlamaRotaryEmbedding-style forward returning (cos, sin).
Simplified: only the "dynamic" init function; head dim 8; no layer types.
"""
from functools import wraps

import torch
from torch import nn


class Config:
    rope_theta = 10000.0
    head_dim = 8
    max_position_embeddings = 8
    rope_parameters = {"rope_type": "dynamic", "factor": 2.0}


def _compute_dynamic_ntk_parameters(config, device, seq_len=None, layer_type=None):
    base = config.rope_theta
    dim = config.head_dim
    factor = config.rope_parameters["factor"]
    max_position_embeddings = config.max_position_embeddings
    seq_len = seq_len if seq_len is not None else max_position_embeddings
    base = base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** (dim / (dim - 2))
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / dim))
    return inv_freq, 1.0


ROPE_INIT_FUNCTIONS = {"dynamic": _compute_dynamic_ntk_parameters}


def dynamic_rope_update(rope_forward):
    def dynamic_frequency_update(self, position_ids, device, layer_type=None):
        seq_len = torch.max(position_ids) + 1
        rope_type = self.rope_type
        max_seq_len_cached = self.max_seq_len_cached
        original_inv_freq = self.original_inv_freq
        prefix = ""
        if seq_len > max_seq_len_cached:  # growth
            rope_init_fn = ROPE_INIT_FUNCTIONS[rope_type]
            inv_freq, self.attention_scaling = rope_init_fn(self.config, device, seq_len=seq_len, layer_type=layer_type)
            self.register_buffer(f"{prefix}inv_freq", inv_freq, persistent=False)
            setattr(self, f"{prefix}max_seq_len_cached", seq_len)

        if seq_len < self.original_max_seq_len and max_seq_len_cached > self.original_max_seq_len:  # reset
            original_inv_freq = original_inv_freq.to(device)
            self.register_buffer(f"{prefix}inv_freq", original_inv_freq, persistent=False)
            setattr(self, f"{prefix}original_inv_freq", original_inv_freq)
            setattr(self, f"{prefix}max_seq_len_cached", self.original_max_seq_len)

    @wraps(rope_forward)
    def wrapper(self, x, position_ids, layer_type=None):
        rope_type = self.rope_type if layer_type is None else self.rope_type[layer_type]
        kwargs = {"layer_type": layer_type} if layer_type is not None else {}
        if "dynamic" in rope_type:
            dynamic_frequency_update(self, position_ids, device=x.device, **kwargs)
        return rope_forward(self, x, position_ids, **kwargs)

    return wrapper


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, config, device=None):
        super().__init__()
        self.rope_type = config.rope_parameters["rope_type"]
        self.max_seq_len_cached = config.max_position_embeddings
        self.original_max_seq_len = config.max_position_embeddings
        self.config = config
        inv_freq, self.attention_scaling = ROPE_INIT_FUNCTIONS[self.rope_type](self.config, device)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = inv_freq

    @torch.no_grad()
    @dynamic_rope_update
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1).to(x.device)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


rotary = torch.compile(LlamaRotaryEmbedding(Config()))


def make():
    x = torch.randn(1, 4, 8)
    return LlamaRotaryEmbedding(Config()), [(x, torch.arange(4)[None]), (x, torch.arange(12)[None])]
