"""LongT5 block in fp32: each `hidden_states.dtype == torch.float16 and torch.isinf(...).any()` clamp
short-circuits on the dtype, so no tensor condition is evaluated (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/longt5/modeling_longt5.py:1100-1150 (LongT5Block;
the same three clamps are in T5, MT5, Pix2Struct and NLLB-MoE)
Census: penguinwu/oss-model-graph-break-corpus sweeps LongT5Model / T5Model in fp32 (the clamp's `and` short-circuits);
issue 14 asks for the fp16-only condition to be reported as such.
Kept: the block's three clamp sites, the `do_cross_attention` branch and the layer list shape.
Simplified: attention layers are Linear residual blocks; fp32 (the fp16 twin is census_longt5_block_fp16_inf_clamp).
"""
import torch
from torch import nn


class Residual(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.lin = nn.Linear(d_model, d_model)

    def forward(self, hidden_states, key_value_states=None):
        if key_value_states is not None:
            hidden_states = hidden_states + key_value_states.mean(dim=1, keepdim=True)
        return (hidden_states + self.lin(hidden_states),)


class LongT5Block(nn.Module):
    def __init__(self, d_model=4, is_decoder=True):
        super().__init__()
        self.is_decoder = is_decoder
        self.layer = nn.ModuleList([Residual(d_model), Residual(d_model), nn.Linear(d_model, d_model)])

    def forward(self, hidden_states, encoder_hidden_states=None):
        self_attention_outputs = self.layer[0](hidden_states)
        hidden_states = self_attention_outputs[0]

        # clamp inf values to enable fp16 inference - check https://github.com/huggingface/transformers/pull/19229/
        if hidden_states.dtype == torch.float16 and torch.isinf(hidden_states).any():
            clamp_value = torch.finfo(hidden_states.dtype).max - 1000
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)

        do_cross_attention = self.is_decoder and encoder_hidden_states is not None
        if do_cross_attention:
            cross_attention_outputs = self.layer[1](hidden_states, key_value_states=encoder_hidden_states)
            hidden_states = cross_attention_outputs[0]

            # clamp inf values to enable fp16 inference - check https://github.com/huggingface/transformers/pull/19229/
            if hidden_states.dtype == torch.float16 and torch.isinf(hidden_states).any():
                clamp_value = torch.finfo(hidden_states.dtype).max - 1000
                hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)

        # Apply Feed Forward layer
        hidden_states = self.layer[-1](hidden_states)

        # clamp inf values to enable fp16 inference - check https://github.com/huggingface/transformers/pull/19229/
        if hidden_states.dtype == torch.float16 and torch.isinf(hidden_states).any():
            clamp_value = torch.finfo(hidden_states.dtype).max - 1000
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)

        return (hidden_states,)


block = torch.compile(LongT5Block())


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 4)
    return LongT5Block(), [(x, torch.randn(1, 2, 4)), (x,)]
