"""Phi-3 LongRoPE at v5.23: torch.where picks the factor set, and a tensor is setattr'd on the module in forward.

Source: huggingface/transformers@v5.23.0:src/transformers/modeling_rope_utils.py:47-81,121-131
Kept: longrope_frequency_update (getattr of the cached long_inv_freq, the
`.to(device)` moves, `setattr(self, "long_inv_freq", ...)`, torch.where over
seq_len, copy_ into the inv_freq buffer) and the decorator's dispatch.
Simplified: the longrope init computes long factors directly; head dim 8.
"""
from functools import wraps

import torch
from torch import nn


class Config:
    head_dim = 8
    rope_theta = 10000.0
    max_position_embeddings = 32
    rope_parameters = {"rope_type": "longrope", "original_max_position_embeddings": 8,
                       "short_factor": [1.0, 1.0, 1.0, 1.0], "long_factor": [1.0, 2.0, 4.0, 8.0]}


def _compute_longrope_parameters(config, device, seq_len=None, layer_type=None):
    dim = config.head_dim
    original = config.rope_parameters["original_max_position_embeddings"]
    if seq_len and seq_len > original:
        ext_factors = torch.tensor(config.rope_parameters["long_factor"], dtype=torch.float32, device=device)
    else:
        ext_factors = torch.tensor(config.rope_parameters["short_factor"], dtype=torch.float32, device=device)
    inv_freq_shape = torch.arange(0, dim, 2, dtype=torch.int64, device=device).float() / dim
    inv_freq = 1.0 / (ext_factors * config.rope_theta**inv_freq_shape)
    return inv_freq, 1.0


ROPE_INIT_FUNCTIONS = {"longrope": _compute_longrope_parameters}


def dynamic_rope_update(rope_forward):
    def longrope_frequency_update(self, position_ids, device, layer_type=None):
        seq_len = torch.max(position_ids) + 1
        rope_type = self.rope_type
        original_inv_freq = self.original_inv_freq
        prefix = ""
        original_max_position_embeddings = self.config.rope_parameters["original_max_position_embeddings"]

        long_inv_freq = getattr(self, f"{prefix}long_inv_freq", None)
        if long_inv_freq is None:
            rope_init_fn = ROPE_INIT_FUNCTIONS[rope_type]
            long_inv_freq, _ = rope_init_fn(self.config, device, seq_len=original_max_position_embeddings + 1, layer_type=layer_type)
        long_inv_freq = long_inv_freq.to(device)
        original_inv_freq = original_inv_freq.to(device)
        setattr(self, f"{prefix}long_inv_freq", long_inv_freq)
        inv_freq = torch.where(seq_len > original_max_position_embeddings, long_inv_freq, original_inv_freq)
        getattr(self, f"{prefix}inv_freq").copy_(inv_freq)

    @wraps(rope_forward)
    def wrapper(self, x, position_ids, layer_type=None):
        rope_type = self.rope_type if layer_type is None else self.rope_type[layer_type]
        kwargs = {"layer_type": layer_type} if layer_type is not None else {}
        if rope_type == "longrope":
            longrope_frequency_update(self, position_ids, device=x.device, **kwargs)
        return rope_forward(self, x, position_ids, **kwargs)

    return wrapper


class Phi3RotaryEmbedding(nn.Module):
    def __init__(self, config, device=None):
        super().__init__()
        self.rope_type = config.rope_parameters["rope_type"]
        self.config = config
        inv_freq, self.attention_scaling = ROPE_INIT_FUNCTIONS[self.rope_type](self.config, device)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = inv_freq

    @torch.no_grad()
    @dynamic_rope_update
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1).to(x.device)
        freqs = (inv_freq_expanded @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * self.attention_scaling).to(x.dtype), (emb.sin() * self.attention_scaling).to(x.dtype)


def make():
    x = torch.randn(1, 4, 8)
    return Phi3RotaryEmbedding(Config()), [(x, torch.arange(4)[None]), (x, torch.arange(16)[None])]


if __name__ == "__main__":
    model, inputs = make()
    model = torch.compile(model)
    for args in inputs:
        model(*args)
