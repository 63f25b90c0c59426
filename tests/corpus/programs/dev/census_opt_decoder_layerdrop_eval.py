"""OPT decoder in eval mode: the LayerDrop draw is skipped by `self.training and self.layerdrop > 0.0`
(no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/opt/modeling_opt.py:280-395
Census: penguinwu/oss-model-graph-break-corpus identify_results (2026-04-19): OPTModel eval is full_graph,
train is graph_break.
Kept: the decoder loop with its LayerDrop gate; embeddings and final norm.
Simplified: decoder layers are Linear+ReLU.
"""
import torch
from torch import nn


class OPTConfig:
    vocab_size = 16
    hidden_size = 8
    num_hidden_layers = 2
    layerdrop = 0.1
    max_position_embeddings = 16


class OPTDecoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layerdrop = config.layerdrop
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.embed_positions = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.layers = nn.ModuleList([nn.Linear(config.hidden_size, config.hidden_size)
                                     for _ in range(config.num_hidden_layers)])

    def forward(self, input_ids):
        position_ids = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        hidden_states = self.embed_tokens(input_ids) + self.embed_positions(position_ids)
        for idx, decoder_layer in enumerate(self.layers):
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:
                    continue
            hidden_states = hidden_states + torch.relu(decoder_layer(hidden_states))
        return hidden_states


@torch.no_grad()
def generate_step(model, ids):
    compiled = torch.compile(model.eval(), mode="reduce-overhead")
    return compiled(ids)


def make():
    torch.manual_seed(0)
    return OPTDecoder(OPTConfig()).eval(), [(torch.tensor([[2, 3, 4]]),)]
