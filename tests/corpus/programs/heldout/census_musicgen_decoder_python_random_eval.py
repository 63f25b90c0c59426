"""MusicGen decoder in eval: `random.uniform(0, 1)` is still drawn per layer but `self.training` short-circuits
the LayerDrop test.

Source: huggingface/transformers@v5.23.0:src/transformers/models/musicgen/modeling_musicgen.py:520-545
Census: penguinwu/oss-model-graph-break-corpus identify_results (2026-04-19): MusicgenModel eval is full_graph,
train is graph_break.
Kept: the same loop as in training.
Simplified: decoder layers are Linear+ReLU.
"""
import random

import torch
from torch import nn


class MusicgenDecoderConfig:
    hidden_size = 8
    num_hidden_layers = 3
    layerdrop = 0.1
    dropout = 0.0


class MusicgenDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states, attention_mask=None, encoder_hidden_states=None, **kwargs):
        return hidden_states + torch.relu(self.fc(hidden_states))


class MusicgenDecoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dropout = config.dropout
        self.layerdrop = config.layerdrop
        self.layers = nn.ModuleList([MusicgenDecoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.layer_norm = nn.LayerNorm(config.hidden_size)

    def forward(self, inputs_embeds, positions):
        hidden_states = inputs_embeds + positions.to(inputs_embeds.device)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)

        for idx, decoder_layer in enumerate(self.layers):
            # add LayerDrop (see https://huggingface.co/papers/1909.11556 for description)
            dropout_probability = random.uniform(0, 1)
            if self.training and (dropout_probability < self.layerdrop):
                continue

            hidden_states = decoder_layer(hidden_states, None, None)

        hidden_states = self.layer_norm(hidden_states)
        return hidden_states


decoder = torch.compile(MusicgenDecoder(MusicgenDecoderConfig()).eval())


def make():
    torch.manual_seed(0)
    return MusicgenDecoder(MusicgenDecoderConfig()).eval(), [(torch.randn(1, 4, 8), torch.randn(1, 4, 8))]
