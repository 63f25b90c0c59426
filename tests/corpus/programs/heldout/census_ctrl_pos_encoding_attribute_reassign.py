"""CTRL reassigns a module attribute in forward: `self.pos_encoding = self.pos_encoding.to(device=..., dtype=...)`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/ctrl/modeling_ctrl.py:45-62, 225-320
Census: penguinwu/oss-model-graph-break-corpus lists CTRLModel among the graph-break models (issue 14 names
"ctrl's `self.pos_encoding = self.pos_encoding.to(...)`" as a break cause).
Kept: `angle_defn`/`positional_encoding`, the non-persistent buffer, `inputs_embeds *= np.sqrt(d_model)`,
the attribute reassignment and the position-id lookup.
Simplified: the transformer layers are one Linear; no mask or token types.
"""
import numpy as np
import torch
from torch import nn


def angle_defn(pos, i, d_model_size):
    angle_rates = 1 / torch.pow(10000, (2 * (i // 2)) / d_model_size)
    return pos * angle_rates


def positional_encoding(position, d_model_size, dtype):
    # create the sinusoidal pattern for the positional encoding
    angle_rads = angle_defn(
        torch.arange(position, dtype=torch.int64).to(dtype).unsqueeze(1),
        torch.arange(d_model_size, dtype=torch.int64).to(dtype).unsqueeze(0),
        d_model_size,
    )
    sines = torch.sin(angle_rads[:, 0::2])
    cosines = torch.cos(angle_rads[:, 1::2])
    pos_encoding = torch.cat([sines, cosines], dim=-1)
    return pos_encoding


class CTRLConfig:
    n_positions = 16
    n_embd = 8
    vocab_size = 20


class CTRLModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.d_model_size = config.n_embd
        self.w = nn.Embedding(config.vocab_size, config.n_embd)
        self.h = nn.Linear(config.n_embd, config.n_embd)
        self.pos_encoding = nn.Buffer(
            positional_encoding(config.n_positions, self.d_model_size, torch.float), persistent=False
        )

    def forward(self, input_ids, position_ids=None):
        device = input_ids.device
        input_shape = input_ids.size()
        if position_ids is None:
            position_ids = torch.arange(0, input_shape[-1], dtype=torch.long, device=device)
            position_ids = position_ids.unsqueeze(0)
        inputs_embeds = self.w(input_ids)
        inputs_embeds *= np.sqrt(self.d_model_size)

        # `self.pos_encoding` won't be sent to the correct device and dtype along the model, so we do it manually.
        self.pos_encoding = self.pos_encoding.to(device=device, dtype=inputs_embeds.dtype)
        pos_embeds = self.pos_encoding[position_ids, :]

        hidden_states = inputs_embeds + pos_embeds
        return self.h(hidden_states)


ctrl = torch.compile(CTRLModel(CTRLConfig()))


def make():
    torch.manual_seed(0)
    return CTRLModel(CTRLConfig()), [(torch.tensor([[1, 5, 7, 2]]),)]
