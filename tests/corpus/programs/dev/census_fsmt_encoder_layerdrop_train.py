"""FSMT encoder LayerDrop with an explicit `self.training and (...)` condition around the draw (train only).

Source: huggingface/transformers@v5.23.0:src/transformers/models/fsmt/modeling_fsmt.py:400-415
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): FSMTModel train,
`modeling_fsmt.py:416 if self.training and (dropout_probability < self.layerdrop)`.
Kept: the encoder loop, the `encoder_states` collection, the gate and the skip with `continue`.
Simplified: layers are Linear+ReLU, the mask and attention outputs are dropped; (T, B, C) layout kept.
"""
import torch
from torch import nn


class FSMTConfig:
    d_model = 16
    encoder_layers = 3
    encoder_layerdrop = 0.5


class EncoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(config.d_model, config.d_model)

    def forward(self, x, encoder_padding_mask=None):
        return x + torch.relu(self.fc(x))


class FSMTEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layerdrop = config.encoder_layerdrop
        self.layers = nn.ModuleList([EncoderLayer(config) for _ in range(config.encoder_layers)])

    def forward(self, inputs_embeds, output_hidden_states=False):
        x = inputs_embeds.transpose(0, 1)  # B x T x C -> T x B x C
        encoder_states = () if output_hidden_states else None
        for idx, encoder_layer in enumerate(self.layers):
            if output_hidden_states:
                encoder_states += (x.transpose(0, 1),)
            # add LayerDrop (see https://huggingface.co/papers/1909.11556 for description)
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                if self.training and (dropout_probability < self.layerdrop):  # skip the layer
                    continue
            x = encoder_layer(x)
        return x.transpose(0, 1), encoder_states


def make_compiled():
    model = FSMTEncoder(FSMTConfig())
    model.train()
    return torch.compile(model, backend="inductor")


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 16)
    return FSMTEncoder(FSMTConfig()).train(), [(x,), (x, True)]
