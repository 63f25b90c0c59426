"""T5Block: fp16-only clamp with `torch.where(torch.isinf(h).any(), max - 1000, max)` (no break in either dtype).

Source: huggingface/transformers@v5.23.0:src/transformers/models/t5/modeling_t5.py:137-141,448-509
Kept: the self-attention layer call returning a tuple, the three dtype-gated
clamps with torch.where over isinf().any(), the decoder-only cross-attention
switch, T5LayerFF (layer norm, dense-relu-dense, residual) and the outputs tuple.
Simplified: attention layers are linear; d_model 8.
"""
import torch
from torch import nn


class T5LayerFF(nn.Module):
    def __init__(self, d_model=8):
        super().__init__()
        self.DenseReluDense = nn.Sequential(nn.Linear(d_model, 16, bias=False), nn.ReLU(), nn.Linear(16, d_model, bias=False))
        self.layer_norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states):
        forwarded_states = self.layer_norm(hidden_states)
        forwarded_states = self.DenseReluDense(forwarded_states)
        hidden_states = hidden_states + self.dropout(forwarded_states)
        return hidden_states


class T5LayerSelfAttention(nn.Module):
    def __init__(self, d_model=8):
        super().__init__()
        self.SelfAttention = nn.Linear(d_model, d_model, bias=False)

    def forward(self, hidden_states, attention_mask=None, position_bias=None):
        return (hidden_states + self.SelfAttention(hidden_states), position_bias)


class T5Block(nn.Module):
    def __init__(self, is_decoder=False):
        super().__init__()
        self.is_decoder = is_decoder
        self.layer = nn.ModuleList([T5LayerSelfAttention(), T5LayerFF()])

    def forward(self, hidden_states, attention_mask=None, position_bias=None, encoder_hidden_states=None):
        hidden_states, position_bias = self.layer[0](hidden_states, attention_mask=attention_mask, position_bias=position_bias)
        if hidden_states.dtype == torch.float16:
            clamp_value = torch.where(
                torch.isinf(hidden_states).any(),
                torch.finfo(hidden_states.dtype).max - 1000,
                torch.finfo(hidden_states.dtype).max,
            )
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
        do_cross_attention = self.is_decoder and encoder_hidden_states is not None
        if do_cross_attention:
            raise NotImplementedError
        hidden_states = self.layer[-1](hidden_states)
        if hidden_states.dtype == torch.float16:
            clamp_value = torch.where(
                torch.isinf(hidden_states).any(),
                torch.finfo(hidden_states.dtype).max - 1000,
                torch.finfo(hidden_states.dtype).max,
            )
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
        outputs = (hidden_states,)
        return outputs + (position_bias,)


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8)
    return T5Block(), [(x,)]


def main():
    torch.manual_seed(0)
    block = T5Block()
    return torch.compile(block)(torch.randn(1, 3, 8))
