"""M2M100 sinusoidal positions: `max_pos > self.weights.size(0)` regrows a buffer in forward (Python ints; no break expected).

Source: huggingface/transformers@v5.23.0:src/transformers/models/m2m_100/modeling_m2m_100.py:78-190
Kept: make_weights (reuse dtype/device of the old buffer, register as a
non-persistent buffer), get_embedding, the forward with
create_position_ids_from_input_ids (ne/cumsum/type_as), max_pos from
padding_idx/seq_len/past length, the is_torchdynamo_compiling-guarded regrow
condition, index_select / view / detach.
Simplified: nn.Buffer is register_buffer; 8 initial positions, dim 6.
"""
import math

import torch
from torch import nn


def is_torchdynamo_compiling():
    return torch.compiler.is_compiling()


class M2M100SinusoidalPositionalEmbedding(nn.Module):
    def __init__(self, num_positions: int, embedding_dim: int, padding_idx=None):
        super().__init__()
        self.offset = 2
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.make_weights(num_positions + self.offset, embedding_dim, padding_idx)

    def make_weights(self, num_embeddings, embedding_dim, padding_idx=None):
        emb_weights = self.get_embedding(num_embeddings, embedding_dim, padding_idx)
        if hasattr(self, "weights"):
            emb_weights = emb_weights.to(dtype=self.weights.dtype, device=self.weights.device)
        self.register_buffer("weights", emb_weights, persistent=False)

    @staticmethod
    def get_embedding(num_embeddings, embedding_dim, padding_idx=None):
        half_dim = embedding_dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, dtype=torch.int64).float() * -emb)
        emb = torch.arange(num_embeddings, dtype=torch.int64).float().unsqueeze(1) * emb.unsqueeze(0)
        emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=1).view(num_embeddings, -1)
        if embedding_dim % 2 == 1:
            emb = torch.cat([emb, torch.zeros(num_embeddings, 1)], dim=1)
        if padding_idx is not None:
            emb[padding_idx, :] = 0
        return emb.to(torch.get_default_dtype())

    @staticmethod
    def create_position_ids_from_input_ids(input_ids, padding_idx, past_key_values_length=0):
        mask = input_ids.ne(padding_idx).int()
        incremental_indices = (torch.cumsum(mask, dim=1).type_as(mask) + past_key_values_length) * mask
        return incremental_indices.long() + padding_idx

    @torch.no_grad()
    def forward(self, input_ids=None, past_key_values_length: int = 0):
        bsz, seq_len = input_ids.size()
        position_ids = self.create_position_ids_from_input_ids(input_ids, self.padding_idx, past_key_values_length).to(input_ids.device)
        max_pos = self.padding_idx + 1 + seq_len + past_key_values_length
        if not (is_torchdynamo_compiling() and torch.is_tensor(max_pos)) and max_pos > self.weights.size(0):
            self.make_weights(max_pos + self.offset, self.embedding_dim, self.padding_idx)
        return self.weights.index_select(0, position_ids.view(-1)).view(bsz, seq_len, self.weights.shape[-1]).detach()


embed_positions = torch.compile(M2M100SinusoidalPositionalEmbedding(8, 6, padding_idx=1))


def make():
    return M2M100SinusoidalPositionalEmbedding(8, 6, padding_idx=1), [(torch.tensor([[5, 6, 7, 1]]),), (torch.tensor([[5] * 12]),)]
