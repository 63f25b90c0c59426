"""BART encoder layer: `if hidden_states.dtype == torch.float16 and not torch.isfinite(hidden_states).all():` clamp (breaks only in fp16).

Source: huggingface/transformers@v5.23.0:src/transformers/models/bart/modeling_bart.py:280-308
Kept: the post-norm residual structure (self-attention tuple, dropout with
self.training, layer norms, fc1/activation/fc2) and the dtype-gated
non-finite clamp with torch.finfo.
Simplified: self-attention is one linear returning (out, None); d_model 8.
Input sets: float32 (the `and` short-circuits) and float16 (evaluates the tensor condition).
"""
import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, hidden_states, attention_mask=None, **kwargs):
        return self.proj(hidden_states), None


class BartEncoderLayer(nn.Module):
    def __init__(self, d_model=8, ffn=16):
        super().__init__()
        self.self_attn = SelfAttention(d_model)
        self.self_attn_layer_norm = nn.LayerNorm(d_model)
        self.dropout = 0.1
        self.activation_fn = nn.GELU()
        self.activation_dropout = 0.0
        self.fc1 = nn.Linear(d_model, ffn)
        self.fc2 = nn.Linear(ffn, d_model)
        self.final_layer_norm = nn.LayerNorm(d_model)

    def forward(self, hidden_states, attention_mask, **kwargs):
        residual = hidden_states
        hidden_states, _ = self.self_attn(hidden_states, attention_mask=attention_mask, **kwargs)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        residual = hidden_states
        hidden_states = self.activation_fn(self.fc1(hidden_states))
        hidden_states = nn.functional.dropout(hidden_states, p=self.activation_dropout, training=self.training)
        hidden_states = self.fc2(hidden_states)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        if hidden_states.dtype == torch.float16 and not torch.isfinite(hidden_states).all():
            clamp_value = torch.finfo(hidden_states.dtype).max - 1000
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
        return hidden_states


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer32 = BartEncoderLayer().eval()
        self.layer16 = BartEncoderLayer().half().eval()

    def forward(self, x):
        return self.layer32(x, None) if x.dtype == torch.float32 else self.layer16(x, None)


encoder = torch.compile(Encoder())


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8)
    return Encoder(), [(x,), (x.half(),)]
