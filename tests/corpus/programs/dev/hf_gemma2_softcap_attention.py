"""Gemma-2 eager attention: optional tanh soft-capping of logits, GQA repeat_kv, fp32 softmax; final-logit softcap (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/gemma2/modeling_gemma2.py:160-207,475-533
Kept: repeat_kv (expand/reshape with the n_rep == 1 shortcut),
eager_attention_forward with `softcap is not None`, the mask add, softmax in
float32 cast back, dropout with module.training; the causal-LM head's
`final_logit_softcapping is not None` tanh capping.
Simplified: q/k/v from one linear; 2 query heads, 1 kv head, head dim 4.
"""
import torch
from torch import nn


def repeat_kv(hidden_states, n_rep: int):
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


def eager_attention_forward(module, query, key, value, attention_mask, dropout=0.0, scaling=None, softcap=None, **kwargs):
    if scaling is None:
        scaling = module.head_dim**-0.5
    key_states = repeat_kv(key, module.num_key_value_groups)
    value_states = repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling
    if softcap is not None:
        attn_weights = attn_weights / softcap
        attn_weights = torch.tanh(attn_weights)
        attn_weights = attn_weights * softcap
    if attention_mask is not None:
        attn_weights = attn_weights + attention_mask
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_weights = nn.functional.dropout(attn_weights, p=dropout, training=module.training)
    attn_output = torch.matmul(attn_weights, value_states)
    attn_output = attn_output.transpose(1, 2).contiguous()
    return attn_output, attn_weights


class Gemma2Config:
    attn_logit_softcapping = 50.0
    final_logit_softcapping = 30.0
    query_pre_attn_scalar = 4


class Gemma2ForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.head_dim = 4
        self.num_key_value_groups = 2
        self.q_proj = nn.Linear(8, 8)
        self.kv_proj = nn.Linear(8, 8)
        self.lm_head = nn.Linear(8, 12)

    def forward(self, hidden_states, attention_mask=None):
        b, s, _ = hidden_states.shape
        query = self.q_proj(hidden_states).view(b, s, 2, 4).transpose(1, 2)
        key, value = self.kv_proj(hidden_states).view(b, s, 2, 4).transpose(1, 2).chunk(2, dim=1)
        attn_output, _ = eager_attention_forward(self, query, key, value, attention_mask, scaling=self.config.query_pre_attn_scalar**-0.5, softcap=self.config.attn_logit_softcapping)
        logits = self.lm_head(attn_output.reshape(b, s, 8))
        if self.config.final_logit_softcapping is not None:
            logits = logits / self.config.final_logit_softcapping
            logits = torch.tanh(logits)
            logits = logits * self.config.final_logit_softcapping
        return logits


model = torch.compile(Gemma2ForCausalLM(Gemma2Config()))


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8)
    return Gemma2ForCausalLM(Gemma2Config()), [(x,), (x, torch.triu(torch.full((1, 1, 3, 3), -1e4), 1))]
