"""OPT decoder LayerDrop: `torch.rand([])` vs `self.layerdrop` with `continue` (train only).

Source: huggingface/transformers@v5.23.0:src/transformers/models/opt/modeling_opt.py:280-395
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): OPTModel, Blip2Model,
InstructBlipModel, InstructBlipVideoModel train: `modeling_opt.py:375 if dropout_probability < self.layerdrop:`.
Kept: the decoder's token/position embeddings, the optional project_in, the LayerDrop loop, final norm.
Simplified: decoder layers are Linear+ReLU; positions from arange; no mask/cache.
"""
import torch
from torch import nn


class OPTConfig:
    vocab_size = 16
    word_embed_proj_dim = 8
    hidden_size = 8
    num_hidden_layers = 3
    layerdrop = 0.3
    dropout = 0.0
    max_position_embeddings = 16
    pad_token_id = 1


class OPTDecoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.fc = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states, attention_mask=None, position_ids=None):
        return (hidden_states + torch.relu(self.fc(hidden_states)),)


class OPTDecoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dropout = config.dropout
        self.layerdrop = config.layerdrop
        self.padding_idx = config.pad_token_id
        self.embed_tokens = nn.Embedding(config.vocab_size, config.word_embed_proj_dim, self.padding_idx)
        self.embed_positions = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        if config.word_embed_proj_dim != config.hidden_size:
            self.project_in = nn.Linear(config.word_embed_proj_dim, config.hidden_size, bias=False)
        else:
            self.project_in = None
        self.layers = nn.ModuleList([OPTDecoderLayer(config) for _ in range(config.num_hidden_layers)])
        self.final_layer_norm = nn.LayerNorm(config.hidden_size)

    def forward(self, input_ids):
        inputs_embeds = self.embed_tokens(input_ids)
        position_ids = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        pos_embeds = self.embed_positions(position_ids)
        if self.project_in is not None:
            inputs_embeds = self.project_in(inputs_embeds)
        hidden_states = inputs_embeds + pos_embeds.to(inputs_embeds.device)
        hidden_states = nn.functional.dropout(hidden_states, p=self.dropout, training=self.training)

        for idx, decoder_layer in enumerate(self.layers):
            # add LayerDrop (see https://huggingface.co/papers/1909.11556 for description)
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                if dropout_probability < self.layerdrop:
                    continue

            hidden_states = decoder_layer(hidden_states, position_ids=position_ids)[0]

        return self.final_layer_norm(hidden_states)


def finetune(model, batches):
    model.train()
    model = torch.compile(model)
    for ids in batches:
        model(ids).sum().backward()


def make():
    torch.manual_seed(0)
    return OPTDecoder(OPTConfig()).train(), [(torch.tensor([[2, 3, 4, 5]]),), (torch.tensor([[6, 7]]),)]
