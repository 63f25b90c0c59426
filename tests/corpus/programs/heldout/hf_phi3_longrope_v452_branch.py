"""Phi-3 LongRoPE at v4.52.4: `if seq_len > original_max_position_embeddings:` on seq_len = torch.max(...) + 1.

Source: huggingface/transformers@v4.52.4:src/transformers/modeling_rope_utils.py:43-60,83-94
Kept: longrope_frequency_update with its hasattr(config, ...) fallback, the lazy
`self.long_inv_freq` init, both register_buffer calls, and the decorator wrapper.
Simplified: the GraphMend paper's example; head dim 8, factors inline.
"""
from functools import wraps

import torch
from torch import nn


class Phi3Config:
    head_dim = 8
    rope_theta = 10000.0
    max_position_embeddings = 32
    original_max_position_embeddings = 8
    rope_scaling = {"type": "longrope", "short_factor": [1.0] * 4, "long_factor": [1.0, 2.0, 4.0, 8.0]}


def _compute_longrope_parameters(config, device, seq_len=None):
    dim = config.head_dim
    if seq_len and seq_len > config.original_max_position_embeddings:
        ext_factors = torch.tensor(config.rope_scaling["long_factor"], dtype=torch.float32, device=device)
    else:
        ext_factors = torch.tensor(config.rope_scaling["short_factor"], dtype=torch.float32, device=device)
    inv_freq_shape = torch.arange(0, dim, 2, dtype=torch.int64, device=device).float() / dim
    return 1.0 / (ext_factors * config.rope_theta**inv_freq_shape), 1.0


def dynamic_rope_update(rope_forward):
    def longrope_frequency_update(self, position_ids, device):
        seq_len = torch.max(position_ids) + 1
        if hasattr(self.config, "original_max_position_embeddings"):
            original_max_position_embeddings = self.config.original_max_position_embeddings
        else:
            original_max_position_embeddings = self.config.max_position_embeddings
        if seq_len > original_max_position_embeddings:
            if not hasattr(self, "long_inv_freq"):
                self.long_inv_freq, _ = self.rope_init_fn(self.config, device, seq_len=original_max_position_embeddings + 1)
            self.register_buffer("inv_freq", self.long_inv_freq, persistent=False)
        else:
            self.original_inv_freq = self.original_inv_freq.to(device)
            self.register_buffer("inv_freq", self.original_inv_freq, persistent=False)

    @wraps(rope_forward)
    def wrapper(self, x, position_ids):
        if "dynamic" in self.rope_type:
            raise NotImplementedError
        elif self.rope_type == "longrope":
            longrope_frequency_update(self, position_ids, device=x.device)
        return rope_forward(self, x, position_ids)

    return wrapper


class Phi3RotaryEmbedding(nn.Module):
    def __init__(self, config, device=None):
        super().__init__()
        self.rope_type = config.rope_scaling.get("rope_type", config.rope_scaling.get("type"))
        self.config = config
        self.rope_init_fn = _compute_longrope_parameters
        inv_freq, self.attention_scaling = self.rope_init_fn(self.config, device)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = self.inv_freq

    @torch.no_grad()
    @dynamic_rope_update
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1).to(x.device)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * self.attention_scaling).to(x.dtype), (emb.sin() * self.attention_scaling).to(x.dtype)


class Phi3Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.rotary_emb = Phi3RotaryEmbedding(config)
        self.proj = nn.Linear(8, 8)

    def forward(self, hidden_states, position_ids):
        cos, sin = self.rotary_emb(hidden_states, position_ids)
        return self.proj(hidden_states * cos + hidden_states * sin)


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 4, 8)
    return Phi3Model(Phi3Config()), [(x, torch.arange(4)[None]), (x, torch.arange(4)[None] + 12)]


model = torch.compile(Phi3Model(Phi3Config()), mode="reduce-overhead")
