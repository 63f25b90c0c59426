"""masking_utils: sdpa_mask / eager_mask built from composed mask functions, with the is_causal skip check.

Source: huggingface/transformers@00c4411cbe15d4c56d54d3b56d4d171e9c289dac:src/transformers/masking_utils.py:44-64,70-76,160-175,188-200,252-290,330-362,368-520
Kept: and_masks, causal_mask_function, sliding_window_overlay/sliding_window_causal_mask_function,
padding_mask_function, prepare_padding_mask (walrus pad), _ignore_causal_mask_sdpa (mask_indices slicing,
the is_tracing / query_length / local size / padding_mask.all() chain), _non_vmap_expansion_sdpa, sdpa_mask's
non-vmap path, eager_mask's bool->min_dtype conversion, and the interface dict keyed by
config._attn_implementation, called from a small attention model (the way create_causal_mask feeds it).
Simplified: no XPU branch, no vmap/flex/flash paths, no Cache object (past key/values are plain tensors);
utils.import_utils.is_tracing is a local stand-in with the same checks (dynamo compiling, jit tracing, fx Proxy).
"""
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn


def is_torchdynamo_compiling():
    return torch.compiler.is_compiling()


def is_tracing(tensor=None) -> bool:
    _is_tracing = is_torchdynamo_compiling() or torch.jit.is_tracing()
    if tensor is not None:
        _is_tracing |= isinstance(tensor, torch.fx.Proxy)
    return _is_tracing


def and_masks(*mask_functions: Callable) -> Callable:
    """Returns a mask function that is the intersection of provided mask functions"""
    if not all(callable(arg) for arg in mask_functions):
        raise RuntimeError(f"All inputs should be callable mask_functions: {mask_functions}")

    def and_mask(batch_idx, head_idx, q_idx, kv_idx):
        result = q_idx.new_ones((), dtype=torch.bool)
        for mask in mask_functions:
            result = result & mask(batch_idx, head_idx, q_idx, kv_idx).to(result.device)
        return result

    return and_mask


def causal_mask_function(batch_idx, head_idx, q_idx, kv_idx):
    return kv_idx <= q_idx


def sliding_window_overlay(sliding_window: int) -> Callable:
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        return kv_idx > q_idx - sliding_window

    return inner_mask


def sliding_window_causal_mask_function(sliding_window: int) -> Callable:
    return and_masks(sliding_window_overlay(sliding_window), causal_mask_function)


def padding_mask_function(padding_mask: torch.Tensor) -> Callable:
    def inner_mask(batch_idx, head_idx, q_idx, kv_idx):
        return padding_mask[batch_idx, kv_idx]

    return inner_mask


def prepare_padding_mask(attention_mask, kv_length: int, kv_offset: int):
    local_padding_mask = attention_mask
    if attention_mask is not None:
        if (padding_length := kv_length + kv_offset - attention_mask.shape[-1]) > 0:
            local_padding_mask = torch.nn.functional.pad(attention_mask, (0, padding_length))
    return local_padding_mask


def _ignore_causal_mask_sdpa(padding_mask, query_length, kv_length, kv_offset, local_attention_size=None) -> bool:
    if padding_mask is not None and padding_mask.shape[-1] > kv_length:
        mask_indices = torch.arange(kv_length, device=padding_mask.device)
        mask_indices += kv_offset
        padding_mask = padding_mask[:, mask_indices]

    if (
        not is_tracing(padding_mask)
        and (query_length == 1 or kv_length == query_length)
        and (local_attention_size is None or kv_length < local_attention_size)
        and (padding_mask is None or padding_mask.all())
    ):
        return True

    return False


def _non_vmap_expansion_sdpa(batch_indices, head_indices, q_indices, kv_indices):
    batch_indices = batch_indices[:, None, None, None]
    head_indices = head_indices[None, :, None, None]
    q_indices = q_indices[None, None, :, None]
    kv_indices = kv_indices[None, None, None, :]
    return batch_indices, head_indices, q_indices, kv_indices


def sdpa_mask(
    batch_size,
    q_length,
    kv_length,
    q_offset=0,
    kv_offset=0,
    mask_function=causal_mask_function,
    attention_mask=None,
    local_size=None,
    allow_is_causal_skip=True,
    allow_torch_fix=True,
    use_vmap=False,
    device="cpu",
    **kwargs,
):
    padding_mask = prepare_padding_mask(attention_mask, kv_length, kv_offset)

    if allow_is_causal_skip and _ignore_causal_mask_sdpa(padding_mask, q_length, kv_length, kv_offset, local_size):
        return None

    if padding_mask is not None:
        mask_function = and_masks(mask_function, padding_mask_function(padding_mask))

    batch_arange = torch.arange(batch_size, device=device)
    head_arange = torch.arange(1, device=device)
    q_arange = torch.arange(q_length, device=device) + q_offset
    kv_arange = torch.arange(kv_length, device=device) + kv_offset

    if not use_vmap:
        attention_mask = mask_function(*_non_vmap_expansion_sdpa(batch_arange, head_arange, q_arange, kv_arange))
        attention_mask = attention_mask.expand(batch_size, -1, q_length, kv_length)
    else:
        raise ValueError("The vmap functionality for mask creation is not available in this build.")

    return attention_mask


def eager_mask(
    batch_size,
    q_length,
    kv_length,
    q_offset=0,
    kv_offset=0,
    mask_function=causal_mask_function,
    attention_mask=None,
    dtype=torch.float32,
    use_vmap=False,
    device="cpu",
    **kwargs,
):
    _ = kwargs.pop("allow_is_causal_skip", None)
    _ = kwargs.pop("allow_torch_fix", None)
    mask = sdpa_mask(
        batch_size=batch_size,
        q_length=q_length,
        kv_length=kv_length,
        q_offset=q_offset,
        kv_offset=kv_offset,
        mask_function=mask_function,
        attention_mask=attention_mask,
        allow_is_causal_skip=False,
        allow_torch_fix=False,
        use_vmap=use_vmap,
        device=device,
        **kwargs,
    )
    if mask is not None:
        min_dtype = torch.finfo(dtype).min
        mask = torch.where(mask, torch.tensor(0.0, device=mask.device, dtype=dtype), min_dtype)
    return mask


ALL_MASK_ATTENTION_FUNCTIONS = {"sdpa": sdpa_mask, "eager": eager_mask}


class Config:
    hidden_size = 8
    num_attention_heads = 2
    sliding_window = 3
    _attn_implementation = "sdpa"


class TinyAttentionModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.num_heads = config.num_attention_heads
        self.head_dim = config.hidden_size // config.num_attention_heads
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.o_proj = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states, attention_mask=None, past_key=None, past_value=None, use_sliding=False):
        batch_size, q_length, _ = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(batch_size, q_length, 3, self.num_heads, self.head_dim).unbind(2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        past_length = 0
        if past_key is not None:
            past_length = past_key.shape[-2]
            k = torch.cat([past_key, k], dim=-2)
            v = torch.cat([past_value, v], dim=-2)
        kv_length = k.shape[-2]

        mask_function = causal_mask_function
        local_size = None
        if use_sliding and self.config.sliding_window is not None:
            mask_function = sliding_window_causal_mask_function(self.config.sliding_window)
            local_size = self.config.sliding_window

        mask_interface = ALL_MASK_ATTENTION_FUNCTIONS[self.config._attn_implementation]
        causal_mask = mask_interface(
            batch_size=batch_size,
            q_length=q_length,
            kv_length=kv_length,
            q_offset=past_length,
            kv_offset=0,
            mask_function=mask_function,
            attention_mask=attention_mask,
            local_size=local_size,
            allow_is_causal_skip=True,
            dtype=hidden_states.dtype,
            device=hidden_states.device,
        )
        is_causal = causal_mask is None and q_length > 1
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask, is_causal=is_causal)
        out = out.transpose(1, 2).reshape(batch_size, q_length, -1)
        return self.o_proj(out), k, v


def build_model():
    return torch.compile(TinyAttentionModel(Config()))


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 8)
    full = torch.ones(2, 5, dtype=torch.bool)
    padded = full.clone()
    padded[0, :2] = False
    past_k = torch.randn(2, 2, 4, 4)
    past_v = torch.randn(2, 2, 4, 4)
    step = torch.randn(2, 1, 8)
    return TinyAttentionModel(Config()), [
        (x,),
        (x, full),
        (x, padded),
        (x, padded, None, None, True),
        (step, torch.ones(2, 5, dtype=torch.bool), past_k, past_v),
        (step, padded[:, :4], past_k, past_v),
    ]
