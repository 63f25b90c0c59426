"""Whisper encoder in training: the mel-length check raises on a shape (fine) and LayerDrop draws
`torch.rand([])` per layer (break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/whisper/modeling_whisper.py:589-640
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): WhisperModel train,
`modeling_whisper.py:633 if dropout_probability < self.layerdrop:  # skip the layer`.
Kept: WhisperEncoder.forward verbatim (expected length check with its f-string ValueError, two GELU convs,
positions, dropout, the LayerDrop loop, final norm).
Simplified: 4 mel bins, d_model 8, 6 source positions; encoder layers are Linear+tanh.
"""
import torch
from torch import nn


class WhisperConfig:
    num_mel_bins = 4
    d_model = 8
    max_source_positions = 6
    encoder_layers = 3
    encoder_layerdrop = 0.5
    dropout = 0.0


class WhisperEncoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(config.d_model, config.d_model)

    def forward(self, hidden_states, attention_mask=None, **kwargs):
        return hidden_states + torch.tanh(self.fc(hidden_states))


class WhisperEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.dropout = config.dropout
        self.layerdrop = config.encoder_layerdrop
        self.conv1 = nn.Conv1d(config.num_mel_bins, config.d_model, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(config.d_model, config.d_model, kernel_size=3, stride=2, padding=1)
        self.embed_positions = nn.Embedding(config.max_source_positions, config.d_model)
        self.layers = nn.ModuleList([WhisperEncoderLayer(config) for _ in range(config.encoder_layers)])
        self.layer_norm = nn.LayerNorm(config.d_model)

    def forward(self, input_features, attention_mask=None, **kwargs):
        expected_seq_length = self.config.max_source_positions * self.conv1.stride[0] * self.conv2.stride[0]
        if input_features.shape[-1] != expected_seq_length:
            raise ValueError(
                f"Whisper expects the mel input features to be of length {expected_seq_length}, but found {input_features.shape[-1]}. Make sure to pad the input mel features to {expected_seq_length}."
            )

        inputs_embeds = nn.functional.gelu(self.conv1(input_features))
        inputs_embeds = nn.functional.gelu(self.conv2(inputs_embeds))

        inputs_embeds = inputs_embeds.permute(0, 2, 1)
        all_positions = torch.arange(self.embed_positions.num_embeddings, device=inputs_embeds.device)

        hidden_states = inputs_embeds + self.embed_positions(all_positions)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)

        for idx, encoder_layer in enumerate(self.layers):
            # add LayerDrop (see https://huggingface.co/papers/1909.11556 for description)
            to_drop = False
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:  # skip the layer
                    to_drop = True

            if not to_drop:
                hidden_states = encoder_layer(
                    hidden_states,
                    None,
                    **kwargs,
                )

        hidden_states = self.layer_norm(hidden_states)
        return hidden_states


def train(model, batches):
    model.train()
    compiled = torch.compile(model)
    for feats in batches:
        compiled(feats).pow(2).mean().backward()


RAISING_INPUTS = {1: "ValueError"}


def make():
    torch.manual_seed(0)
    return WhisperEncoder(WhisperConfig()).train(), [(torch.randn(1, 4, 12),), (torch.randn(1, 4, 10),)]
