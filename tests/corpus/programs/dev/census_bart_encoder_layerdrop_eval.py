"""BART encoder in eval mode: the LayerDrop draw sits behind `self.training`, so nothing breaks.

Source: huggingface/transformers@v5.23.0:src/transformers/models/bart/modeling_bart.py:531-545
Census: penguinwu/oss-model-graph-break-corpus identify_results (nightly 2026-04-19, torch 2.13 nightly) marks
BartModel full_graph in eval and graph_break in train; this is the eval side.
Kept: BartEncoder.forward's layer loop with the `self.training and self.layerdrop > 0.0` gate.
Simplified: embeddings/mask creation dropped; encoder layers are Linear+GELU residual blocks.
"""
import torch
from torch import nn


class BartConfig:
    d_model = 16
    encoder_layers = 3
    encoder_layerdrop = 0.1
    dropout = 0.1


class BartEncoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc1 = nn.Linear(config.d_model, config.d_model)
        self.act = nn.GELU()

    def forward(self, hidden_states, attention_mask=None):
        return hidden_states + self.act(self.fc1(hidden_states))


class BartEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dropout = config.dropout
        self.layerdrop = config.encoder_layerdrop
        self.layernorm_embedding = nn.LayerNorm(config.d_model)
        self.layers = nn.ModuleList([BartEncoderLayer(config) for _ in range(config.encoder_layers)])

    def forward(self, inputs_embeds, attention_mask=None):
        hidden_states = self.layernorm_embedding(inputs_embeds)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        for idx, encoder_layer in enumerate(self.layers):
            to_drop = False
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:  # skip the layer
                    to_drop = True

            if not to_drop:
                hidden_states = encoder_layer(hidden_states, attention_mask)
        return hidden_states


model = torch.compile(BartEncoder(BartConfig()).eval())


def make():
    torch.manual_seed(0)
    return BartEncoder(BartConfig()).eval(), [(torch.randn(2, 5, 16),)]
