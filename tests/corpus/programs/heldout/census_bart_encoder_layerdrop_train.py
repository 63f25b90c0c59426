"""BART encoder LayerDrop: a `torch.rand([])` draw compared with `self.layerdrop` skips layers (train only).

Source: huggingface/transformers@v5.23.0:src/transformers/models/bart/modeling_bart.py:531-545
Census: penguinwu/oss-model-graph-break-corpus sweep_results/pt2.10/explain_results.json lists
`modeling_bart.py:538 if dropout_probability < self.layerdrop` for BartModel in train mode only.
Kept: BartEncoder.forward's layer loop, the `self.training and self.layerdrop > 0.0` gate, the rand draw,
the `to_drop` flag and the config plumbing.
Simplified: embeddings/mask creation dropped; encoder layers are Linear+GELU residual blocks.
"""
import torch
from torch import nn


class BartConfig:
    d_model = 16
    encoder_layers = 4
    encoder_layerdrop = 0.5
    dropout = 0.0


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
        self.config = config
        self.dropout = config.dropout
        self.layerdrop = config.encoder_layerdrop
        self.layernorm_embedding = nn.LayerNorm(config.d_model)
        self.layers = nn.ModuleList([BartEncoderLayer(config) for _ in range(config.encoder_layers)])

    def forward(self, inputs_embeds, attention_mask=None):
        hidden_states = self.layernorm_embedding(inputs_embeds)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)
        for idx, encoder_layer in enumerate(self.layers):
            # add LayerDrop (see https://huggingface.co/papers/1909.11556 for description)
            to_drop = False
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:  # skip the layer
                    to_drop = True

            if not to_drop:
                hidden_states = encoder_layer(hidden_states, attention_mask)
        return hidden_states


def train(model, batches, steps=1):
    model.train()
    compiled = torch.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for x in batches[:steps]:
        loss = compiled(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()


def make():
    torch.manual_seed(0)
    model = BartEncoder(BartConfig()).train()
    x = torch.randn(2, 5, 16)
    return model, [(x,), (x * 0.5,)]
