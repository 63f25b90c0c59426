"""GPT-2 attention at v5.23: cross-attention plumbing on `is not None`, c_attn split, eager_attention_forward (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/gpt2/modeling_gpt2.py:54-72,144-226
Kept: eager_attention_forward (scaling default, optional mask add, softmax,
type cast, dropout with module.training, transpose), GPT2Attention.forward's
is_cross_attention switch with the hasattr(q_attn) ValueError, the split and
view/transpose plumbing, scale_attn_weights / scale_attn_by_inverse_layer_idx
scaling, the (output, weights) tuple.
Simplified: no cache objects, one attention implementation; 2 heads of 4.
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
    attn_weights = attn_weights.type(value.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value)
    attn_output = attn_output.transpose(1, 2)
    return attn_output, attn_weights


class GPT2Config:
    n_embd = 8
    n_head = 2
    scale_attn_weights = True
    scale_attn_by_inverse_layer_idx = True
    attn_pdrop = 0.0


class GPT2Attention(nn.Module):
    def __init__(self, config, is_cross_attention=False, layer_idx=1):
        super().__init__()
        self.config = config
        self.embed_dim = config.n_embd
        self.num_heads = config.n_head
        self.head_dim = self.embed_dim // self.num_heads
        self.split_size = self.embed_dim
        self.scale_attn_weights = config.scale_attn_weights
        self.is_cross_attention = is_cross_attention
        self.scale_attn_by_inverse_layer_idx = config.scale_attn_by_inverse_layer_idx
        self.layer_idx = layer_idx
        if self.is_cross_attention:
            self.c_attn = nn.Linear(self.embed_dim, 2 * self.embed_dim)
            self.q_attn = nn.Linear(self.embed_dim, self.embed_dim)
        else:
            self.c_attn = nn.Linear(self.embed_dim, 3 * self.embed_dim)
        self.c_proj = nn.Linear(self.embed_dim, self.embed_dim)

    def forward(self, hidden_states, attention_mask=None, encoder_hidden_states=None, encoder_attention_mask=None):
        is_cross_attention = encoder_hidden_states is not None
        if is_cross_attention:
            if not hasattr(self, "q_attn"):
                raise ValueError(
                    "If class is used as cross attention, the weights `q_attn` have to be defined. "
                    "Please make sure to instantiate class with `GPT2Attention(..., is_cross_attention=True)`."
                )
            query_states = self.q_attn(hidden_states)
            attention_mask = encoder_attention_mask
            key_states, value_states = self.c_attn(encoder_hidden_states).split(self.split_size, dim=2)
        else:
            query_states, key_states, value_states = self.c_attn(hidden_states).split(self.split_size, dim=2)
        shape_kv = (*key_states.shape[:-1], -1, self.head_dim)
        key_states = key_states.view(shape_kv).transpose(1, 2)
        value_states = value_states.view(shape_kv).transpose(1, 2)
        shape_q = (*query_states.shape[:-1], -1, self.head_dim)
        query_states = query_states.view(shape_q).transpose(1, 2)
        scaling = 1.0
        if self.scale_attn_weights:
            scaling = scaling / (value_states.size(-1) ** 0.5)
        if self.scale_attn_by_inverse_layer_idx:
            scaling = scaling / float(self.layer_idx + 1)
        attn_output, attn_weights = eager_attention_forward(
            self, query_states, key_states, value_states, attention_mask,
            dropout=self.config.attn_pdrop if self.training else 0.0, scaling=scaling,
        )
        attn_output = attn_output.reshape(*attn_output.shape[:-2], -1).contiguous()
        attn_output = self.c_proj(attn_output)
        return attn_output, attn_weights


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = GPT2Attention(GPT2Config())
        self.crossattention = GPT2Attention(GPT2Config(), is_cross_attention=True)

    def forward(self, x, encoder_hidden_states=None, attention_mask=None):
        out = self.attn(x, attention_mask=attention_mask)[0]
        if encoder_hidden_states is not None:
            out = out + self.crossattention(out, encoder_hidden_states=encoder_hidden_states)[0]
        return out


block = torch.compile(Block())


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 4, 8)
    mask = torch.zeros(1, 1, 4, 4)
    return Block(), [(x,), (x, torch.randn(1, 3, 8), mask)]
