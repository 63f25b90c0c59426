"""LongT5/T5 attention without relative bias: `position_bias.requires_grad = True` under gradient checkpointing.

Source: huggingface/transformers@v5.23.0:src/transformers/models/longt5/modeling_longt5.py:494-520
Kept: the `position_bias is None` block with the has_relative_attention_bias
switch, torch.zeros of (1, n_heads, q, k), the gradient_checkpointing-and-
training guarded requires_grad mutation, scores += position_bias.
Simplified: one attention layer, no cache, 2 heads of 4.
"""
import torch
from torch import nn


class LongT5Attention(nn.Module):
    def __init__(self, d_model=8, n_heads=2, has_relative_attention_bias=False):
        super().__init__()
        self.n_heads = n_heads
        self.key_value_proj_dim = d_model // n_heads
        self.q = nn.Linear(d_model, d_model, bias=False)
        self.k = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, d_model, bias=False)
        self.o = nn.Linear(d_model, d_model, bias=False)
        self.has_relative_attention_bias = has_relative_attention_bias
        self.gradient_checkpointing = True

    def forward(self, hidden_states, position_bias=None):
        input_shape = hidden_states.shape[:-1]
        hidden_shape = (*input_shape, -1, self.key_value_proj_dim)
        query_states = self.q(hidden_states).view(hidden_shape).transpose(1, 2)
        key_states = self.k(hidden_states).view(hidden_shape).transpose(1, 2)
        value_states = self.v(hidden_states).view(hidden_shape).transpose(1, 2)
        scores = torch.matmul(query_states, key_states.transpose(3, 2))
        if position_bias is None:
            key_length = key_states.shape[-2]
            if not self.has_relative_attention_bias:
                position_bias = torch.zeros(
                    (1, self.n_heads, input_shape[1], key_length), device=scores.device, dtype=scores.dtype
                )
                if self.gradient_checkpointing and self.training:
                    position_bias.requires_grad = True
        scores += position_bias
        attn_weights = nn.functional.softmax(scores.float(), dim=-1).type_as(scores)
        attn_output = torch.matmul(attn_weights, value_states).transpose(1, 2).reshape(*input_shape, -1)
        return self.o(attn_output), position_bias


def build():
    layer = LongT5Attention().train()
    return torch.compile(layer)


def make():
    torch.manual_seed(0)
    return LongT5Attention().train(), [(torch.randn(2, 5, 8),)]
