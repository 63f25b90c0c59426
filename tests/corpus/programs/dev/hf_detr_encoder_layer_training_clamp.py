"""DETR encoder layer: `if self.training: if not torch.isfinite(hidden_states).all():` clamp (breaks only in training).

Source: huggingface/transformers@v5.23.0:src/transformers/models/detr/modeling_detr.py:590-647
Kept: the self-attention call with spatial position embeddings, dropout on
self.training, the residual/norm structure with an MLP, and the
training-only non-finite check with finfo clamp.
Simplified: attention adds position embeddings then one linear; d_model 8.
"""
import torch
from torch import nn


class DetrSelfAttention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, d)

    def forward(self, hidden_states, attention_mask=None, position_embeddings=None, **kwargs):
        if position_embeddings is not None:
            hidden_states = hidden_states + position_embeddings
        return self.proj(hidden_states), None


class DetrEncoderLayer(nn.Module):
    def __init__(self, d_model=8):
        super().__init__()
        self.self_attn = DetrSelfAttention(d_model)
        self.dropout = 0.0
        self.self_attn_layer_norm = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 16), nn.ReLU(), nn.Linear(16, d_model))
        self.final_layer_norm = nn.LayerNorm(d_model)

    def forward(self, hidden_states, attention_mask=None, spatial_position_embeddings=None, **kwargs):
        residual = hidden_states
        hidden_states, _ = self.self_attn(hidden_states=hidden_states, attention_mask=attention_mask, position_embeddings=spatial_position_embeddings, **kwargs)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = residual + hidden_states
        hidden_states = self.self_attn_layer_norm(hidden_states)
        residual = hidden_states
        hidden_states = self.mlp(hidden_states)
        hidden_states = residual + hidden_states
        hidden_states = self.final_layer_norm(hidden_states)
        if self.training:
            if not torch.isfinite(hidden_states).all():
                clamp_value = torch.finfo(hidden_states.dtype).max - 1000
                hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
        return hidden_states


layer = DetrEncoderLayer()
layer.train()
layer = torch.compile(layer)


def make():
    torch.manual_seed(0)
    return DetrEncoderLayer().train(), [(torch.randn(1, 4, 8), None, torch.randn(1, 4, 8))]
