"""GPT-2 `eager_attention_forward`: default scaling from the query size, optional additive mask
(`if attention_mask is not None`), softmax, downcast to the value dtype and training-gated dropout (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/gpt2/modeling_gpt2.py:54-72 and the c_attn split of
GPT2Attention.forward
Census: penguinwu/oss-model-graph-break-corpus identify_results (2026-04-19): GPT2Model is full_graph in eval and
train.
Kept: eager_attention_forward verbatim; the attention module's qkv split into heads and merge.
Simplified: no cache, no cross-attention, no layer-wise upcasting; 2 heads of size 2.
"""
import torch
from torch import nn


def eager_attention_forward(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    if scaling is None:
        scaling = query.size(-1) ** -0.5

    attn_weights = torch.matmul(query, key.transpose(-1, -2)) * scaling

    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask

    attn_weights = nn.functional.softmax(attn_weights, dim=-1)

    # Downcast (if necessary) back to V's dtype (if in mixed-precision) -- No-Op otherwise
    attn_weights = attn_weights.type(value.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)

    attn_output = torch.matmul(attn_weights, value)
    attn_output = attn_output.transpose(1, 2)

    return attn_output, attn_weights


class GPT2Attention(nn.Module):
    def __init__(self, embed_dim=4, num_heads=2, attn_pdrop=0.1):
        super().__init__()
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.split_size = embed_dim
        self.c_attn = nn.Linear(embed_dim, 3 * embed_dim)
        self.c_proj = nn.Linear(embed_dim, embed_dim)
        self.attn_dropout = attn_pdrop

    def forward(self, hidden_states, attention_mask=None):
        query_states, key_states, value_states = self.c_attn(hidden_states).split(self.split_size, dim=2)
        shape = (*hidden_states.shape[:-1], -1, self.head_dim)
        query_states = query_states.view(shape).transpose(1, 2)
        key_states = key_states.view(shape).transpose(1, 2)
        value_states = value_states.view(shape).transpose(1, 2)
        attn_output, attn_weights = eager_attention_forward(
            self,
            query_states,
            key_states,
            value_states,
            attention_mask,
            dropout=self.attn_dropout if self.training else 0.0,
        )
        attn_output = attn_output.reshape(*attn_output.shape[:-2], -1).contiguous()
        return self.c_proj(attn_output)


attn = torch.compile(GPT2Attention().eval())


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 4)
    causal = torch.triu(torch.full((3, 3), float("-inf")), diagonal=1)
    return GPT2Attention().eval(), [(x,), (x, causal)]
