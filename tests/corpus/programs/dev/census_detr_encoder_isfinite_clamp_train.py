"""DETR encoder layer clamps activations when `not torch.isfinite(hidden_states).all()` (train only).

Source: huggingface/transformers@v5.23.0:src/transformers/models/detr/modeling_detr.py:610-647
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): DetrModel, ConditionalDetrModel,
RTDetrModel, DFineModel ... train: `if not torch.isfinite(hidden_states).all():`.
Kept: DetrEncoderLayer.forward's residual/attention/MLP shape and the training-only clamp block.
Simplified: nn.MultiheadAttention stands in for DetrSelfAttention; no position embeddings.
"""
import torch
from torch import nn


class DetrConfig:
    d_model = 16
    encoder_attention_heads = 2
    encoder_ffn_dim = 32
    dropout = 0.0


class DetrEncoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.hidden_size = config.d_model
        self.self_attn = nn.MultiheadAttention(config.d_model, config.encoder_attention_heads, batch_first=True)
        self.self_attn_layer_norm = nn.LayerNorm(self.hidden_size)
        self.dropout = config.dropout
        self.mlp = nn.Sequential(nn.Linear(config.d_model, config.encoder_ffn_dim), nn.ReLU(),
                                 nn.Linear(config.encoder_ffn_dim, config.d_model))
        self.final_layer_norm = nn.LayerNorm(self.hidden_size)

    def forward(self, hidden_states, attention_mask=None):
        residual = hidden_states
        hidden_states, _ = self.self_attn(hidden_states, hidden_states, hidden_states, need_weights=False)
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


def fit(layer, images, epochs=1):
    layer.train()
    compiled_layer = torch.compile(layer, dynamic=False)
    for _ in range(epochs):
        for x in images:
            compiled_layer(x).mean().backward()


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 6, 16)
    bad = x.clone()
    bad[0, 0, 0] = float("inf")
    return DetrEncoderLayer(DetrConfig()).train(), [(x,), (bad,)]
