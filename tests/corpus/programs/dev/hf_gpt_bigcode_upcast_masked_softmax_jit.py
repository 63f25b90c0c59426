"""GPT-BigCode attention: torch.jit.script fused upcast softmax kernels and a cached mask_value attribute.

Source: huggingface/transformers@00574544580e648fa0c9aa9934640b2902959078:src/transformers/models/gpt_bigcode/modeling_gpt_bigcode.py:58-300
Kept: the three @torch.jit.script kernels (upcast_masked_softmax, upcast_softmax, masked_softmax),
GPTBigCodeAttention (multi-query split, layer_past concat, _get_mask_value caching a tensor on self, the
CPU baddbmm branch on query.device, upcast / unscale logic from attention_softmax_in_fp32 and
scale_attention_softmax_in_fp32, head_mask permute, MQA bmm), GPTBigCodeMLP and GPTBigCodeBlock (use_cache
tuple plumbing). A small wrapper builds the bool causal mask from a `bias` buffer and the 2D padding mask the
way GPTBigCodeModel.forward does. Simplified: no cross attention, no flash/sdpa classes, hidden 8, 2 heads,
one block; the model runs in bfloat16 so the upcast kernels are the ones used.
"""
from typing import Optional, Tuple, Union

import torch
from torch import nn


class GPTBigCodeConfig:
    hidden_size = 8
    num_attention_heads = 2
    n_inner = None
    multi_query = True
    scale_attn_weights = True
    attention_softmax_in_fp32 = True
    scale_attention_softmax_in_fp32 = True
    attn_pdrop = 0.0
    resid_pdrop = 0.0
    layer_norm_epsilon = 1e-5
    activation_function = "gelu_pytorch_tanh"
    add_cross_attention = False
    max_position_embeddings = 16


ACT2FN = {"gelu_pytorch_tanh": nn.GELU(approximate="tanh")}


@torch.jit.script
def upcast_masked_softmax(
    x: torch.Tensor, mask: torch.Tensor, mask_value: torch.Tensor, scale: float, softmax_dtype: torch.dtype
):
    input_dtype = x.dtype
    x = x.to(softmax_dtype) * scale
    x = torch.where(mask, x, mask_value)
    x = torch.nn.functional.softmax(x, dim=-1).to(input_dtype)
    return x


@torch.jit.script
def upcast_softmax(x: torch.Tensor, scale: float, softmax_dtype: torch.dtype):
    input_dtype = x.dtype
    x = x.to(softmax_dtype) * scale
    x = torch.nn.functional.softmax(x, dim=-1).to(input_dtype)
    return x


@torch.jit.script
def masked_softmax(x: torch.Tensor, mask: torch.Tensor, mask_value: torch.Tensor):
    x = torch.where(mask, x, mask_value)
    x = torch.nn.functional.softmax(x, dim=-1)
    return x


class GPTBigCodeAttention(nn.Module):
    def __init__(self, config, is_cross_attention=False, layer_idx=None):
        super().__init__()
        self.mask_value = None

        self.multi_query = config.multi_query
        self.embed_dim = config.hidden_size
        self.num_heads = config.num_attention_heads
        self.head_dim = self.embed_dim // self.num_heads
        self.kv_heads = 1 if self.multi_query else self.num_heads
        self.kv_dim = self.kv_heads * self.head_dim
        self.split_size = self.embed_dim
        if self.head_dim * self.num_heads != self.embed_dim:
            raise ValueError(
                f"`embed_dim` must be divisible by num_heads (got `embed_dim`: {self.embed_dim} and `num_heads`:"
                f" {self.num_heads})."
            )

        self.scale_attn_weights = config.scale_attn_weights
        self.is_cross_attention = is_cross_attention

        self.layer_idx = layer_idx
        self.attention_softmax_in_fp32 = config.attention_softmax_in_fp32
        self.scale_attention_softmax_in_fp32 = (
            config.scale_attention_softmax_in_fp32 and config.attention_softmax_in_fp32
        )

        self.c_attn = nn.Linear(self.embed_dim, self.embed_dim + 2 * self.kv_dim)
        self.c_proj = nn.Linear(self.embed_dim, self.embed_dim)

        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)

    def _get_mask_value(self, device, dtype):
        # torch.where expects a tensor. We use a cache to avoid recreating it every time.
        if self.mask_value is None or self.mask_value.dtype != dtype or self.mask_value.device != device:
            self.mask_value = torch.full([], torch.finfo(dtype).min, dtype=dtype, device=device)
        return self.mask_value

    def _attn(self, query, key, value, attention_mask=None, head_mask=None):
        dtype = query.dtype
        softmax_dtype = torch.float32 if self.attention_softmax_in_fp32 else dtype
        upcast = dtype != softmax_dtype

        unscale = self.layer_idx + 1 if self.scale_attention_softmax_in_fp32 and upcast else 1
        scale_factor = unscale**-1
        if self.scale_attn_weights:
            scale_factor /= self.head_dim**0.5

        query_shape = query.shape
        batch_size = query_shape[0]
        key_length = key.size(-1)
        if self.multi_query:
            query_length = query_shape[1]
            attn_shape = (batch_size, query_length, self.num_heads, key_length)
            attn_view = (batch_size, query_length * self.num_heads, key_length)
            query = query.reshape(batch_size, query_length * self.num_heads, self.head_dim)
        else:
            query_length = query_shape[2]
            attn_shape = (batch_size, self.num_heads, query_length, key_length)
            attn_view = (batch_size * self.num_heads, query_length, key_length)
            query = query.reshape(batch_size * self.num_heads, query_length, self.head_dim)
            key = key.reshape(batch_size * self.num_heads, self.head_dim, key_length)

        if query.device == torch.device("cpu"):
            zeros = torch.zeros(attn_view, dtype=query.dtype, device=query.device)
            attn_weights = torch.baddbmm(zeros, query, key, beta=1, alpha=scale_factor).view(attn_shape)
        else:
            attn_weights = torch.baddbmm(torch.empty(attn_view), query, key, beta=0, alpha=scale_factor).view(
                attn_shape
            )

        if upcast:
            if attention_mask is None:
                attn_weights = upcast_softmax(attn_weights, unscale, softmax_dtype)
            else:
                mask_value = self._get_mask_value(attn_weights.device, softmax_dtype)
                attn_weights = upcast_masked_softmax(attn_weights, attention_mask, mask_value, unscale, softmax_dtype)
        else:
            if attention_mask is not None:
                mask_value = self._get_mask_value(attn_weights.device, softmax_dtype)
                attn_weights = torch.where(attention_mask, attn_weights, mask_value)
            attn_weights = torch.nn.functional.softmax(attn_weights, dim=-1)

        attn_weights = self.attn_dropout(attn_weights)

        if head_mask is not None:
            if self.multi_query:
                head_mask = head_mask.permute(0, 2, 1, 3)
            attn_weights = attn_weights * head_mask

        if self.multi_query:
            attn_output = torch.bmm(attn_weights.view(attn_view), value).view(query_shape)
        else:
            attn_output = torch.matmul(attn_weights, value)

        return attn_output, attn_weights

    def forward(self, hidden_states, layer_past=None, attention_mask=None, head_mask=None,
                use_cache=False, output_attentions=False):
        if self.multi_query:
            query, key_value = self.c_attn(hidden_states).split((self.embed_dim, 2 * self.kv_dim), dim=2)
        else:
            query, key_value = (
                self.c_attn(hidden_states)
                .view(*hidden_states.shape[:2], self.num_heads, 3 * self.head_dim)
                .transpose(1, 2)
                .split((self.head_dim, 2 * self.head_dim), dim=3)
            )

        if layer_past is not None:
            key_value = torch.cat((layer_past, key_value), dim=-2)
        present = key_value if use_cache else None

        key, value = key_value.split((self.head_dim, self.head_dim), dim=-1)

        attn_output, attn_weights = self._attn(query, key.transpose(-1, -2), value, attention_mask, head_mask)

        if not self.multi_query:
            attn_output = attn_output.transpose(1, 2).reshape(hidden_states.shape)
        attn_output = self.c_proj(attn_output)
        attn_output = self.resid_dropout(attn_output)

        outputs = (attn_output, present)
        if output_attentions:
            outputs += (attn_weights,)
        return outputs


class GPTBigCodeMLP(nn.Module):
    def __init__(self, intermediate_size, config):
        super().__init__()
        embed_dim = config.hidden_size
        self.c_fc = nn.Linear(embed_dim, intermediate_size)
        self.c_proj = nn.Linear(intermediate_size, embed_dim)
        self.act = ACT2FN[config.activation_function]
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class GPTBigCodeBlock(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        hidden_size = config.hidden_size
        self.inner_dim = config.n_inner if config.n_inner is not None else 4 * hidden_size
        self.ln_1 = nn.LayerNorm(hidden_size, eps=config.layer_norm_epsilon)
        self.attn = GPTBigCodeAttention(config, layer_idx=layer_idx)
        self.ln_2 = nn.LayerNorm(hidden_size, eps=config.layer_norm_epsilon)
        self.mlp = GPTBigCodeMLP(self.inner_dim, config)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, head_mask=None,
                use_cache=False, output_attentions=False):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_outputs = self.attn(
            hidden_states,
            layer_past=layer_past,
            attention_mask=attention_mask,
            head_mask=head_mask,
            use_cache=use_cache,
            output_attentions=output_attentions,
        )
        attn_output = attn_outputs[0]
        outputs = attn_outputs[1:]
        hidden_states = attn_output + residual

        residual = hidden_states
        hidden_states = self.ln_2(hidden_states)
        feed_forward_hidden_states = self.mlp(hidden_states)
        hidden_states = residual + feed_forward_hidden_states

        if use_cache:
            outputs = (hidden_states,) + outputs
        else:
            outputs = (hidden_states,) + outputs[1:]
        return outputs


class GPTBigCodeOneBlock(nn.Module):
    """The mask preparation of GPTBigCodeModel.forward around a single block."""

    def __init__(self, config):
        super().__init__()
        self.multi_query = config.multi_query
        max_positions = config.max_position_embeddings
        self.register_buffer(
            "bias", torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)), persistent=False
        )
        self.h = nn.ModuleList([GPTBigCodeBlock(config, layer_idx=0)])

    def forward(self, hidden_states, attention_mask=None, layer_past=None, use_cache=False):
        batch_size, query_length = hidden_states.shape[:2]
        past_length = 0 if layer_past is None else layer_past.size(-2)
        key_length = past_length + query_length
        self_attention_mask = self.bias[None, key_length - query_length : key_length, :key_length]
        if attention_mask is not None:
            self_attention_mask = self_attention_mask * attention_mask.view(batch_size, 1, -1).to(
                dtype=torch.bool, device=self_attention_mask.device
            )
        attention_mask = self_attention_mask.unsqueeze(2 if self.multi_query else 1)
        outputs = self.h[0](hidden_states, layer_past=layer_past, attention_mask=attention_mask, use_cache=use_cache)
        return outputs


model = torch.compile(GPTBigCodeOneBlock(GPTBigCodeConfig()).to(torch.bfloat16))


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 4, 8, dtype=torch.bfloat16)
    mask = torch.ones(2, 4)
    mask[0, 0] = 0
    past = torch.randn(2, 3, 8, dtype=torch.bfloat16)
    step = torch.randn(2, 1, 8, dtype=torch.bfloat16)
    return GPTBigCodeOneBlock(GPTBigCodeConfig()).to(torch.bfloat16), [
        (x,),
        (x, mask, None, True),
        (step, torch.ones(2, 4), past, True),
    ]
