"""ESM embeddings: mask-token "token dropout" rescales by the observed mask ratio, position ids from cumsum of the non-pad mask (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/esm/modeling_esm.py:190-275 (and create_position_ids_from_input_ids, roberta-style)
Kept: EsmEmbeddings.forward verbatim (position_ids from input_ids or embeds,
the token_dropout masked_fill and the ratio rescale with src_lengths from the
mask or the static shape, absolute positions, optional layer norm, attention
mask multiply) and create_position_ids_from_input_ids.
Simplified: vocab 12, dim 8, 16 positions.
"""
import torch
from torch import nn


def create_position_ids_from_input_ids(input_ids, padding_idx, past_key_values_length=0):
    mask = input_ids.ne(padding_idx).int()
    incremental_indices = (torch.cumsum(mask, dim=1).type_as(mask) + past_key_values_length) * mask
    return incremental_indices.long() + padding_idx


class EsmConfig:
    vocab_size = 12
    hidden_size = 8
    max_position_embeddings = 16
    pad_token_id = 1
    mask_token_id = 11
    token_dropout = True
    emb_layer_norm_before = True
    layer_norm_eps = 1e-12
    position_embedding_type = "absolute"


class EsmEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        if config.emb_layer_norm_before:
            self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        else:
            self.layer_norm = None
        self.position_embedding_type = getattr(config, "position_embedding_type", "absolute")
        self.register_buffer("position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)), persistent=False)
        self.padding_idx = config.pad_token_id
        if self.position_embedding_type == "absolute":
            self.position_embeddings = nn.Embedding(
                config.max_position_embeddings, config.hidden_size, padding_idx=self.padding_idx
            )
        self.token_dropout = config.token_dropout
        self.mask_token_id = config.mask_token_id

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, inputs_embeds=None):
        if position_ids is None:
            if input_ids is not None:
                position_ids = create_position_ids_from_input_ids(input_ids, self.padding_idx)
            else:
                position_ids = self.create_position_ids_from_inputs_embeds(inputs_embeds)

        if inputs_embeds is None:
            inputs_embeds = self.word_embeddings(input_ids)

        embeddings = inputs_embeds

        if self.token_dropout and input_ids is not None:
            embeddings = embeddings.masked_fill((input_ids == self.mask_token_id).unsqueeze(-1), 0.0)
            mask_ratio_train = 0.15 * 0.8  # Hardcoded as the ratio used in all ESM model training runs
            src_lengths = attention_mask.sum(-1) if attention_mask is not None else input_ids.shape[1]
            mask_ratio_observed = (input_ids == self.mask_token_id).sum(-1).float() / src_lengths
            embeddings = (embeddings * (1 - mask_ratio_train) / (1 - mask_ratio_observed)[:, None, None]).to(
                embeddings.dtype
            )

        if self.position_embedding_type == "absolute":
            position_embeddings = self.position_embeddings(position_ids)
            embeddings = embeddings + position_embeddings

        if self.layer_norm is not None:
            embeddings = self.layer_norm(embeddings)
        if attention_mask is not None:
            embeddings = (embeddings * attention_mask.unsqueeze(-1)).to(embeddings.dtype)
        return embeddings

    def create_position_ids_from_inputs_embeds(self, inputs_embeds):
        input_shape = inputs_embeds.size()[:-1]
        sequence_length = input_shape[1]
        position_ids = torch.arange(
            self.padding_idx + 1, sequence_length + self.padding_idx + 1, dtype=torch.long, device=inputs_embeds.device
        )
        return position_ids.unsqueeze(0).expand(input_shape)


embeddings = torch.compile(EsmEmbeddings(EsmConfig()).eval())


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[0, 5, 11, 7, 2, 1], [0, 4, 6, 2, 1, 1]])
    mask = ids.ne(1).long()
    return EsmEmbeddings(EsmConfig()).eval(), [(ids, mask), (ids,), (None, None, None, torch.randn(1, 4, 8))]
