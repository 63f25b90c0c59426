"""LongT5 block: `if hidden_states.dtype == torch.float16 and torch.isinf(hidden_states).any():` clamp after attention, cross attention and FF.

Source: huggingface/transformers@v5.23.0:src/transformers/models/longt5/modeling_longt5.py:1090-1155
Kept: the block body: self-attention outputs tuple and attention_outputs
slicing, the three dtype-gated isinf clamps with finfo max - 1000, the
decoder-only cross-attention switch, the feed-forward layer, the outputs tuple.
(Contrast: T5Block at v5.23 computes the same clamp with torch.where.)
Simplified: attention and FF layers are residual linears; d_model 8; run in float16 as the entry does.
"""
import torch
from torch import nn


class Residual(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, hidden_states, **kwargs):
        return (hidden_states + self.fc(hidden_states), None)


class LongT5Block(nn.Module):
    def __init__(self, d_model=8, is_decoder=True):
        super().__init__()
        self.is_decoder = is_decoder
        self.layer = nn.ModuleList([Residual(d_model), Residual(d_model), nn.Linear(d_model, d_model)])

    def forward(self, hidden_states, attention_mask=None, encoder_hidden_states=None, encoder_attention_mask=None):
        self_attention_outputs = self.layer[0](hidden_states, attention_mask=attention_mask)
        hidden_states = self_attention_outputs[0]
        attention_outputs = self_attention_outputs[1:]
        if hidden_states.dtype == torch.float16 and torch.isinf(hidden_states).any():
            clamp_value = torch.finfo(hidden_states.dtype).max - 1000
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
        do_cross_attention = self.is_decoder and encoder_hidden_states is not None
        if do_cross_attention:
            cross_attention_outputs = self.layer[1](hidden_states, key_value_states=encoder_hidden_states, attention_mask=encoder_attention_mask)
            hidden_states = cross_attention_outputs[0]
            if hidden_states.dtype == torch.float16 and torch.isinf(hidden_states).any():
                clamp_value = torch.finfo(hidden_states.dtype).max - 1000
                hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
            attention_outputs = attention_outputs + cross_attention_outputs[1:]
        hidden_states = self.layer[-1](hidden_states)
        if hidden_states.dtype == torch.float16 and torch.isinf(hidden_states).any():
            clamp_value = torch.finfo(hidden_states.dtype).max - 1000
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
        return (hidden_states,) + attention_outputs


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8).half()
    return LongT5Block().half().eval(), [(x,), (x, None, torch.randn(1, 2, 8).half())]


def fp16_inference():
    block = LongT5Block().half().eval()
    return torch.compile(block)
