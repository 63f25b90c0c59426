"""CTRL: `self.pos_encoding = self.pos_encoding.to(device=..., dtype=...)` rebinds a module attribute in forward.

Source: huggingface/transformers@v5.23.0:src/transformers/models/ctrl/modeling_ctrl.py:45-62,220-337
Kept: angle_defn / positional_encoding, the nn.Buffer-style registration,
position_ids from past_length, token_type embeds scaled by np.sqrt, the
`inputs_embeds *= np.sqrt(d)` scaling, the attribute reassignment and the
position gather, the layer loop.
Simplified: layers are linear; no cache; n_embd 8, n_positions 16.
"""
import numpy as np
import torch
from torch import nn


def angle_defn(pos, i, d_model_size):
    angle_rates = 1 / torch.pow(10000, (2 * (i // 2)) / d_model_size)
    return pos * angle_rates


def positional_encoding(position, d_model_size, dtype):
    angle_rads = angle_defn(
        torch.arange(position, dtype=torch.int64).to(dtype).unsqueeze(1),
        torch.arange(d_model_size, dtype=torch.int64).to(dtype).unsqueeze(0),
        d_model_size,
    )
    sines = torch.sin(angle_rads[:, 0::2])
    cosines = torch.cos(angle_rads[:, 1::2])
    return torch.cat([sines, cosines], dim=-1)


class CTRLConfig:
    n_embd = 8
    n_positions = 16
    n_layer = 2
    vocab_size = 20


class CTRLModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.d_model_size = config.n_embd
        self.w = nn.Embedding(config.vocab_size, config.n_embd)
        self.h = nn.ModuleList([nn.Linear(config.n_embd, config.n_embd) for _ in range(config.n_layer)])
        self.layernorm = nn.LayerNorm(config.n_embd)
        self.register_buffer("pos_encoding", positional_encoding(config.n_positions, self.d_model_size, torch.float), persistent=False)

    def forward(self, input_ids, token_type_ids=None, past_length=0):
        inputs_embeds = self.w(input_ids)
        input_shape = inputs_embeds.shape[:-1]
        device = inputs_embeds.device
        position_ids = torch.arange(past_length, input_shape[-1] + past_length, dtype=torch.long, device=device)
        position_ids = position_ids.unsqueeze(0)
        if token_type_ids is not None:
            token_type_embeds = self.w(token_type_ids)
            token_type_embeds *= np.sqrt(self.d_model_size)
        else:
            token_type_embeds = 0
        inputs_embeds *= np.sqrt(self.d_model_size)
        self.pos_encoding = self.pos_encoding.to(device=device, dtype=inputs_embeds.dtype)
        pos_embeds = self.pos_encoding[position_ids, :]
        hidden_states = inputs_embeds + pos_embeds + token_type_embeds
        for h in self.h:
            hidden_states = h(hidden_states)
        return self.layernorm(hidden_states)


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[1, 4, 7, 9]])
    return CTRLModel(CTRLConfig()), [(ids,), (ids, torch.zeros_like(ids), 2)]


ctrl = torch.compile(CTRLModel(CTRLConfig()).eval())
