"""DETR encoder layer in eval mode: the isfinite clamp is inside `if self.training:` (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/detr/modeling_detr.py:610-647
Census: penguinwu/oss-model-graph-break-corpus identify_results (2026-04-19): DetrModel eval is full_graph,
train graph_break.
Kept: DetrEncoderLayer.forward including the training-only clamp block.
Simplified: nn.MultiheadAttention stands in for DetrSelfAttention.
"""
import torch
from torch import nn


class DetrConfig:
    d_model = 16
    encoder_attention_heads = 2
    encoder_ffn_dim = 32
    dropout = 0.1


class DetrEncoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(config.d_model, config.encoder_attention_heads, batch_first=True)
        self.self_attn_layer_norm = nn.LayerNorm(config.d_model)
        self.dropout = config.dropout
        self.fc1 = nn.Linear(config.d_model, config.encoder_ffn_dim)
        self.fc2 = nn.Linear(config.encoder_ffn_dim, config.d_model)
        self.final_layer_norm = nn.LayerNorm(config.d_model)

    def forward(self, hidden_states, attention_mask=None):
        residual = hidden_states
        hidden_states, _ = self.self_attn(hidden_states, hidden_states, hidden_states, need_weights=False)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        hidden_states = self.self_attn_layer_norm(residual + hidden_states)
        residual = hidden_states
        hidden_states = self.fc2(torch.relu(self.fc1(hidden_states)))
        hidden_states = self.final_layer_norm(residual + hidden_states)

        if self.training:
            if not torch.isfinite(hidden_states).all():
                clamp_value = torch.finfo(hidden_states.dtype).max - 1000
                hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)

        return hidden_states


def build():
    layer = DetrEncoderLayer(DetrConfig())
    return torch.compile(layer.eval())


def make():
    torch.manual_seed(0)
    return DetrEncoderLayer(DetrConfig()).eval(), [(torch.randn(2, 6, 16),)]
