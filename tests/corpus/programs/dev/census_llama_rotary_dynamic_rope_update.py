"""Llama rotary embedding with `rope_type="dynamic"`: `@dynamic_rope_update` computes
`seq_len = torch.max(position_ids) + 1` and branches on `seq_len > max_seq_len_cached` (buffer re-registration).

Source: huggingface/transformers@v5.23.0:src/transformers/modeling_rope_utils.py:34-130, 270-330 and
src/transformers/models/llama/modeling_llama.py (LlamaRotaryEmbedding)
Census: penguinwu/oss-model-graph-break-corpus sweeps Llama-family models with default RoPE (full_graph); this is
the dynamic-NTK configuration of the same module (the decorator's "TODO joao: may break with compilation").
Kept: the decorator's wrapper and dynamic_frequency_update (growth and reset branches, register_buffer, setattr),
the dynamic NTK init function's tensor seq_len path, LlamaRotaryEmbedding verbatim.
Simplified: no per-layer-type RoPE, no longrope; hidden 8, 2 heads, 4 original positions.
"""
from functools import wraps

import torch
from torch import nn


def _compute_default_rope_parameters(config, device=None, seq_len=None, layer_type=None):
    base = config.rope_parameters["rope_theta"]
    dim = config.hidden_size // config.num_attention_heads
    attention_factor = 1.0  # Unused in this type of RoPE
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / dim))
    return inv_freq, attention_factor


def _compute_dynamic_ntk_parameters(config, device=None, seq_len=None, layer_type=None):
    base = config.rope_parameters["rope_theta"]
    dim = config.hidden_size // config.num_attention_heads
    max_position_embeddings = config.max_position_embeddings
    factor = config.rope_parameters["factor"]
    attention_factor = 1.0  # Unused in this type of RoPE
    # seq_len: default to max_position_embeddings, e.g. at init time
    if seq_len is None:
        seq_len = max_position_embeddings
    elif isinstance(seq_len, torch.Tensor):
        seq_len = torch.maximum(
            seq_len,
            torch.tensor(max_position_embeddings, dtype=seq_len.dtype, device=seq_len.device),
        )
    else:
        seq_len = max(seq_len, max_position_embeddings)
    # Compute the inverse frequencies
    base = base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** (dim / (dim - 2))
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).to(device=device, dtype=torch.float) / dim))
    return inv_freq, attention_factor


ROPE_INIT_FUNCTIONS = {"default": _compute_default_rope_parameters, "dynamic": _compute_dynamic_ntk_parameters}


def dynamic_rope_update(rope_forward):
    def dynamic_frequency_update(self, position_ids, device, layer_type=None):
        """
        dynamic RoPE layers should recompute `inv_freq` in the following situations:
        1 - growing beyond the cached sequence length (allow scaling)
        2 - the current sequence length is in the original scale (avoid losing precision with small sequences)
        """
        seq_len = torch.max(position_ids) + 1
        rope_type = self.rope_type
        max_seq_len_cached = self.max_seq_len_cached
        original_inv_freq = self.original_inv_freq
        prefix = ""

        if seq_len > max_seq_len_cached:  # growth
            rope_init_fn = ROPE_INIT_FUNCTIONS[rope_type]
            inv_freq, self.attention_scaling = rope_init_fn(
                self.config,
                device,
                seq_len=seq_len,
                layer_type=layer_type,
            )
            # TODO joao: may break with compilation
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


class LlamaConfig:
    hidden_size = 8
    num_attention_heads = 2
    max_position_embeddings = 4

    def __init__(self, rope_type):
        self.rope_parameters = {"rope_type": rope_type, "rope_theta": 10000.0, "factor": 2.0}


class LlamaRotaryEmbedding(nn.Module):
    def __init__(self, config, device=None):
        super().__init__()
        self.max_seq_len_cached = config.max_position_embeddings
        self.original_max_seq_len = config.max_position_embeddings
        self.config = config
        self.rope_type = self.config.rope_parameters["rope_type"]
        rope_init_fn = ROPE_INIT_FUNCTIONS[self.rope_type]
        inv_freq, self.attention_scaling = rope_init_fn(self.config, device)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = inv_freq

    @torch.no_grad()
    @dynamic_rope_update  # power user: used with advanced RoPE types (e.g. dynamic rope)
    def forward(self, x, position_ids):
        inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1).to(x.device)
        position_ids_expanded = position_ids[:, None, :].float()
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


rotary = torch.compile(LlamaRotaryEmbedding(LlamaConfig("dynamic")))


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 6, 8)
    return LlamaRotaryEmbedding(LlamaConfig("dynamic")), [
        (x, torch.arange(6).unsqueeze(0)),
        (x[:, :3], torch.arange(3).unsqueeze(0)),
    ]
