"""integrations.sdpa_attention: GQA choice, is_causal from shape/mask/module flag, warning_once on output_attentions.

Source: huggingface/transformers@00c238bd242b4c6ddfb2c17d4573174ec2daaec8:src/transformers/integrations/sdpa_attention.py:1-185
Kept: the module-level version flags, repeat_kv, use_gqa_in_sdpa, _apply_mps_fixes, and sdpa_attention_forward whole
(output_attentions warning_once, hasattr(module, "num_key_value_groups") GQA branch with enable_gqa kwargs,
getattr(module, "is_causal", True), the shape/mask is_causal expression, jit-tracing .item(), NPU and MPS branches),
called through an ALL_ATTENTION_FUNCTIONS dict from a Llama-style GQA attention module (the caller every decoder
model in the library shares; output_attentions is an explicit forward argument as in 4.4x Llama, forwarded as a kwarg). Simplified: version/device probes are local stand-ins (is_torch_greater_or_equal
parses torch.__version__, no XPU/NPU present); the logger is a stdlib logger with transformers' lru_cache'd
warning_once; no rotary embedding or KV cache in the caller; hidden 8, 4 query heads, 2 kv heads.
"""
import functools
import logging

import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger("transformers.integrations.sdpa_attention")


@functools.lru_cache(None)
def _warning_once(self, *args, **kwargs):
    self.warning(*args, **kwargs)


logging.Logger.warning_once = _warning_once


def is_torch_greater_or_equal(library_version: str, accept_dev: bool = False) -> bool:
    base = torch.__version__.split("+")[0]
    if accept_dev:
        base = base.split(".dev")[0].split("a")[0]
    current = tuple(int(p) for p in base.split(".")[:2] if p.isdigit())
    wanted = tuple(int(p) for p in library_version.split("."))
    return current >= wanted


def is_torch_xpu_available():
    return False


def is_torch_npu_available():
    return False


_is_torch_greater_or_equal_than_2_5 = is_torch_greater_or_equal("2.5", accept_dev=True)
_is_torch_greater_or_equal_than_2_8 = is_torch_greater_or_equal("2.8", accept_dev=True)
_is_torch_greater_or_equal_than_2_11 = is_torch_greater_or_equal("2.11", accept_dev=True)
_is_torch_greater_or_equal_than_2_12 = is_torch_greater_or_equal("2.12", accept_dev=True)
_is_torch_xpu_available = is_torch_xpu_available()
_is_torch_npu_available = is_torch_npu_available()


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def use_gqa_in_sdpa(attention_mask, key: torch.Tensor) -> bool:
    if _is_torch_xpu_available:
        return _is_torch_greater_or_equal_than_2_8
    return _is_torch_greater_or_equal_than_2_5 and attention_mask is None


def _apply_mps_fixes(query, key, value, attention_mask, is_causal):
    original_v_head_dim = None
    if not _is_torch_greater_or_equal_than_2_12:
        q_head_dim = query.shape[-1]
        v_head_dim = value.shape[-1]
        if v_head_dim != q_head_dim:
            original_v_head_dim = v_head_dim
            value = F.pad(value, (0, q_head_dim - v_head_dim))
    if _is_torch_greater_or_equal_than_2_8 and not _is_torch_greater_or_equal_than_2_11:
        if not is_causal and query.dtype != torch.float32:
            if attention_mask is None or attention_mask.dtype == torch.bool:
                attention_mask = torch.zeros(
                    (query.shape[0], 1, query.shape[2], key.shape[2]),
                    dtype=query.dtype,
                    device=query.device,
                )
    return query, key, value, attention_mask, original_v_head_dim


def sdpa_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None,
                           **kwargs):
    if kwargs.get("output_attentions", False):
        logger.warning_once(
            "`sdpa` attention does not support `output_attentions=True`."
            " Please set your attention to `eager` if you want any of these features."
        )
    sdpa_kwargs = {}
    if hasattr(module, "num_key_value_groups"):
        if not use_gqa_in_sdpa(attention_mask, key):
            key = repeat_kv(key, module.num_key_value_groups)
            value = repeat_kv(value, module.num_key_value_groups)
        else:
            sdpa_kwargs = {"enable_gqa": True}

    is_causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)

    is_causal = query.shape[2] > 1 and attention_mask is None and is_causal

    if torch.jit.is_tracing() and isinstance(is_causal, torch.Tensor):
        is_causal = is_causal.item()

    if _is_torch_npu_available:
        if attention_mask is not None and attention_mask.dtype != torch.bool:
            attention_mask = torch.logical_not(attention_mask.bool()).to(query.device)

    original_v_head_dim = None
    if query.device.type == "mps":
        query, key, value, attention_mask, original_v_head_dim = _apply_mps_fixes(
            query, key, value, attention_mask, is_causal
        )

    attn_output = torch.nn.functional.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
        is_causal=is_causal,
        **sdpa_kwargs,
    )

    if original_v_head_dim is not None:
        attn_output = attn_output[..., :original_v_head_dim]

    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, None


ALL_ATTENTION_FUNCTIONS = {"sdpa": sdpa_attention_forward}


class LlamaConfig:
    hidden_size = 8
    num_attention_heads = 4
    num_key_value_heads = 2
    attention_dropout = 0.0
    attention_bias = False
    _attn_implementation = "sdpa"


class LlamaAttention(nn.Module):
    def __init__(self, config, layer_idx=0):
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        self.head_dim = getattr(config, "head_dim", config.hidden_size // config.num_attention_heads)
        self.num_key_value_groups = config.num_attention_heads // config.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        self.attention_dropout = config.attention_dropout
        self.is_causal = True
        self.q_proj = nn.Linear(config.hidden_size, config.num_attention_heads * self.head_dim, bias=config.attention_bias)
        self.k_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=config.attention_bias)
        self.v_proj = nn.Linear(config.hidden_size, config.num_key_value_heads * self.head_dim, bias=config.attention_bias)
        self.o_proj = nn.Linear(config.num_attention_heads * self.head_dim, config.hidden_size, bias=config.attention_bias)

    def forward(self, hidden_states, attention_mask=None, output_attentions=False, **kwargs):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.head_dim)

        query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v_proj(hidden_states).view(hidden_shape).transpose(1, 2)

        attention_interface = ALL_ATTENTION_FUNCTIONS[self.config._attn_implementation]
        attn_output, attn_weights = attention_interface(
            self,
            query_states,
            key_states,
            value_states,
            attention_mask,
            dropout=0.0 if not self.training else self.attention_dropout,
            scaling=self.scaling,
            output_attentions=output_attentions,
            **kwargs,
        )
        attn_output = attn_output.reshape(*input_shape, -1).contiguous()
        attn_output = self.o_proj(attn_output)
        return attn_output, attn_weights


attn = torch.compile(LlamaAttention(LlamaConfig()), dynamic=True)


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 8)
    mask = torch.zeros(2, 1, 5, 5)
    mask[:, :, :, 0] = torch.finfo(torch.float32).min
    return LlamaAttention(LlamaConfig()), [
        (x,),
        (x, mask),
        (x[:, :1],),
        (x, None, True),
    ]
