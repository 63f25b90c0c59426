"""GLM-4V vision attention (non-flash path): `lengths = cu_seqlens[1:] - cu_seqlens[:-1]` then
`torch.split(tensor, lengths.tolist(), dim=2)` per image before attention.

Source: huggingface/transformers@v5.23.0:src/transformers/models/glm4v/modeling_glm4v.py:312-395 (Glm4vVisionAttention)
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): Glm4vVisionModel, Glm4vMoeVisionModel,
GlmImageVisionModel eval+train, `seqlens = (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()` (the same per-image split).
Kept: qkv reshape/unbind, the q/k/v transposes, the `is_flash_attention_requested(self.config)` branch choice,
the tolist split and per-chunk attention with concatenation, the output projection.
Simplified: rotary embedding omitted; the attention interface is an eager SDPA wrapper; the flash path is not
reachable (config requests "sdpa").
"""
import torch
import torch.nn.functional as F
from torch import nn


def is_flash_attention_requested(config):
    return "flash" in (config._attn_implementation or "")


def eager_attention_forward(module, query, key, value, attention_mask=None, scaling=None, dropout=0.0, **kwargs):
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=attention_mask, dropout_p=dropout,
                                         scale=scaling)
    return out.transpose(1, 2), None


class Glm4vVisionConfig:
    hidden_size = 8
    num_heads = 2
    attention_bias = True
    attention_dropout = 0.0
    _attn_implementation = "sdpa"


class Glm4vVisionAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dim = config.hidden_size
        self.num_heads = config.num_heads
        self.head_dim = self.dim // self.num_heads
        self.num_key_value_groups = 1  # needed for eager attention
        self.qkv = nn.Linear(config.hidden_size, config.hidden_size * 3, bias=config.attention_bias)
        self.proj = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.scaling = self.head_dim**-0.5
        self.config = config
        self.attention_dropout = config.attention_dropout
        self.is_causal = False

    def forward(self, hidden_states, cu_seqlens, max_seqlen=None, **kwargs):
        seq_length = hidden_states.shape[0]
        query_states, key_states, value_states = (
            self.qkv(hidden_states).reshape(seq_length, 3, self.num_heads, -1).permute(1, 0, 2, 3).unbind(0)
        )

        query_states = query_states.transpose(0, 1).unsqueeze(0)
        key_states = key_states.transpose(0, 1).unsqueeze(0)
        value_states = value_states.transpose(0, 1).unsqueeze(0)

        attention_interface = eager_attention_forward

        if is_flash_attention_requested(self.config):
            raise NotImplementedError("the flash-attention path is not part of this translation")
        else:
            # Other implementations: Process each chunk separately
            lengths = cu_seqlens[1:] - cu_seqlens[:-1]
            splits = [
                torch.split(tensor, lengths.tolist(), dim=2) for tensor in (query_states, key_states, value_states)
            ]

            attn_outputs = [
                attention_interface(
                    self,
                    q,
                    k,
                    v,
                    attention_mask=None,
                    scaling=self.scaling,
                    dropout=0.0 if not self.training else self.attention_dropout,
                    is_causal=False,
                    **kwargs,
                )[0]
                for q, k, v in zip(*splits)
            ]
            attn_output = torch.cat(attn_outputs, dim=1)

        attn_output = attn_output.reshape(seq_length, -1).contiguous()
        attn_output = self.proj(attn_output)
        return attn_output


attn = torch.compile(Glm4vVisionAttention(Glm4vVisionConfig()).eval())


def make():
    torch.manual_seed(0)
    return Glm4vVisionAttention(Glm4vVisionConfig()).eval(), [
        (torch.randn(7, 8), torch.tensor([0, 3, 7], dtype=torch.int32)),
    ]
