"""Longformer `_get_global_attn_indices`: `.max()` as an arange bound and three `nonzero(as_tuple=True)`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/longformer/modeling_longformer.py:850-876
Kept: the static method verbatim and its use in the self-attention forward
when `is_global_attn` is set (the 4-tuple unpacking, the key gather).
Simplified: the attention is a gather of the global keys; hidden 8.
"""
import torch
from torch import nn


class LongformerSelfAttention(nn.Module):
    def __init__(self, hidden=8):
        super().__init__()
        self.key = nn.Linear(hidden, hidden)

    @staticmethod
    def _get_global_attn_indices(is_index_global_attn):
        """compute global attn indices required throughout forward pass"""
        num_global_attn_indices = is_index_global_attn.long().sum(dim=1)
        max_num_global_attn_indices = num_global_attn_indices.max()
        is_index_global_attn_nonzero = is_index_global_attn.nonzero(as_tuple=True)
        is_local_index_global_attn = torch.arange(
            max_num_global_attn_indices, device=is_index_global_attn.device
        ) < num_global_attn_indices.unsqueeze(dim=-1)
        is_local_index_global_attn_nonzero = is_local_index_global_attn.nonzero(as_tuple=True)
        is_local_index_no_global_attn_nonzero = (is_local_index_global_attn == 0).nonzero(as_tuple=True)
        return (
            max_num_global_attn_indices,
            is_index_global_attn_nonzero,
            is_local_index_global_attn_nonzero,
            is_local_index_no_global_attn_nonzero,
        )

    def forward(self, hidden_states, is_index_global_attn, is_global_attn: bool):
        key_vectors = self.key(hidden_states)
        if is_global_attn:
            (
                max_num_global_attn_indices,
                is_index_global_attn_nonzero,
                is_local_index_global_attn_nonzero,
                is_local_index_no_global_attn_nonzero,
            ) = self._get_global_attn_indices(is_index_global_attn)
            batch_size = key_vectors.shape[0]
            key_vectors_only_global = key_vectors.new_zeros(batch_size, max_num_global_attn_indices, key_vectors.shape[-1])
            key_vectors_only_global[is_local_index_global_attn_nonzero] = key_vectors[is_index_global_attn_nonzero]
            return key_vectors + key_vectors_only_global.sum(1, keepdim=True)
        return key_vectors


attn = torch.compile(LongformerSelfAttention())


def make():
    torch.manual_seed(0)
    mask = torch.zeros(2, 6, dtype=torch.bool)
    mask[0, 0] = True
    mask[1, :2] = True
    return LongformerSelfAttention(), [(torch.randn(2, 6, 8), mask, True), (torch.randn(2, 6, 8), mask, False)]
