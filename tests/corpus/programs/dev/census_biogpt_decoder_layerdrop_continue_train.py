"""BioGPT decoder LayerDrop: `continue` out of the layer loop when a rand draw is below layerdrop (train only).

Source: huggingface/transformers@v5.23.0:src/transformers/models/biogpt/modeling_biogpt.py:385-400
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): BioGptModel train,
`modeling_biogpt.py:396 if dropout_probability < self.layerdrop:`.
Kept: the positions + dropout prologue, the loop with the `continue`, config plumbing.
Simplified: decoder layers are Linear+tanh residual blocks, no cache, no causal mask.
"""
import torch
from torch import nn


class BioGptConfig:
    hidden_size = 16
    num_hidden_layers = 3
    layerdrop = 0.4
    hidden_dropout_prob = 0.0
    max_position_embeddings = 32


class BioGptDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.proj = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states, attention_mask=None):
        return hidden_states + torch.tanh(self.proj(hidden_states))


class BioGptModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layerdrop = config.layerdrop
        self.dropout = config.hidden_dropout_prob
        self.embed_positions = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.layers = nn.ModuleList([BioGptDecoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.layer_norm = nn.LayerNorm(config.hidden_size)

    def forward(self, inputs_embeds, position_ids=None):
        seq_length = inputs_embeds.shape[1]
        if position_ids is None:
            position_ids = torch.arange(seq_length, device=inputs_embeds.device)
            position_ids = position_ids.unsqueeze(0)
        positions = self.embed_positions(position_ids)
        hidden_states = inputs_embeds + positions
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)

        for idx, decoder_layer in enumerate(self.layers):
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:
                    continue

            hidden_states = decoder_layer(hidden_states)
        return self.layer_norm(hidden_states)


def training_step(model, batch):
    compiled = torch.compile(model)
    loss = compiled(batch).mean()
    loss.backward()
    return loss


def make():
    torch.manual_seed(0)
    return BioGptModel(BioGptConfig()).train(), [(torch.randn(2, 6, 16),), (torch.randn(1, 4, 16),)]
