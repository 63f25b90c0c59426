"""Informer ProbSparse attention at v4.52.4: `np.ceil(np.log1p(L)).astype("int").item()` on shape ints, randint sampling, topk queries.

Source: huggingface/transformers@v4.52.4:src/transformers/models/informer/modeling_informer.py:480-620
Kept: the projection/_shape plumbing, the numpy log-length computations,
u_part/u with min(), the key sampling with torch.randint, the sparsity
measurement and topk, the reduced query gather, the attention-size
ValueError and the mask gather, the softmax and the context written back
into the mean of values.
Simplified: no cache, no head mask; 2 heads of 4, factor 2.
"""
import numpy as np
import torch
from torch import nn


class InformerProbSparseAttention(nn.Module):
    def __init__(self, embed_dim=8, num_heads=2, sampling_factor=2):
        super().__init__()
        self.factor = sampling_factor
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim**-0.5
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def _shape(self, tensor, seq_len, bsz):
        return tensor.view(bsz, seq_len, self.num_heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states, attention_mask=None):
        bsz, tgt_len, _ = hidden_states.size()
        query_states = self.q_proj(hidden_states) * self.scaling
        key_states = self._shape(self.k_proj(hidden_states), -1, bsz)
        value_states = self._shape(self.v_proj(hidden_states), -1, bsz)
        proj_shape = (bsz * self.num_heads, -1, self.head_dim)
        query_states = self._shape(query_states, tgt_len, bsz).view(*proj_shape)
        key_states = key_states.reshape(*proj_shape)
        value_states = value_states.reshape(*proj_shape)
        key_states_time_length = key_states.size(1)
        log_key_states_time_length = np.ceil(np.log1p(key_states_time_length)).astype("int").item()
        query_states_time_length = query_states.size(1)
        log_query_states_time_length = np.ceil(np.log1p(query_states_time_length)).astype("int").item()
        u_part = min(self.factor * query_states_time_length * log_key_states_time_length, key_states_time_length)
        u = min(self.factor * log_query_states_time_length, query_states_time_length)
        if key_states_time_length > 0:
            index_sample = torch.randint(0, key_states_time_length, (u_part,))
            k_sample = key_states[:, index_sample, :]
        else:
            k_sample = key_states
        queries_keys_sample = torch.bmm(query_states, k_sample.transpose(1, 2))
        if u > 0:
            sparsity_measurement = queries_keys_sample.max(dim=-1)[0] - torch.div(queries_keys_sample.sum(dim=-1), key_states_time_length)
            top_u_sparsity_measurement = sparsity_measurement.topk(u, sorted=False)[1]
            dim_for_slice = torch.arange(query_states.size(0)).unsqueeze(-1)
            q_reduce = query_states[dim_for_slice, top_u_sparsity_measurement]
        else:
            q_reduce = query_states
            top_u_sparsity_measurement = None
        attn_weights = torch.bmm(q_reduce, key_states.transpose(1, 2))
        src_len = key_states.size(1)
        if attn_weights.size() != (bsz * self.num_heads, u, src_len):
            raise ValueError(f"Attention weights should be of size {(bsz * self.num_heads, u, src_len)}, but is {attn_weights.size()}")
        if attention_mask is not None:
            prob_mask = attention_mask.expand(bsz, self.num_heads, tgt_len, src_len).reshape(bsz * self.num_heads, tgt_len, src_len)
            if top_u_sparsity_measurement is not None:
                dim_for_slice = torch.arange(prob_mask.size(0)).unsqueeze(-1)
                prob_mask = prob_mask[dim_for_slice, top_u_sparsity_measurement, :]
            attn_weights = attn_weights.view(bsz, self.num_heads, u, src_len) + prob_mask.view(bsz, self.num_heads, u, src_len)
            attn_weights = attn_weights.view(bsz * self.num_heads, u, src_len)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_output = torch.bmm(attn_weights, value_states)
        context = value_states.mean(dim=-2, keepdim=True).expand(-1, tgt_len, -1).clone()
        if top_u_sparsity_measurement is not None:
            dim_for_slice = torch.arange(context.size(0)).unsqueeze(-1)
            context[dim_for_slice, top_u_sparsity_measurement, :] = attn_output
        context = context.view(bsz, self.num_heads, tgt_len, self.head_dim).transpose(1, 2).reshape(bsz, tgt_len, self.embed_dim)
        return self.out_proj(context)


attention = torch.compile(InformerProbSparseAttention())


def make():
    torch.manual_seed(0)
    return InformerProbSparseAttention(), [(torch.randn(1, 6, 8),), (torch.randn(1, 6, 8), torch.zeros(1, 1, 6, 6))]
