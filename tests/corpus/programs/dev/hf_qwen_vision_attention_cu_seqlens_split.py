"""Qwen-VL-family vision attention (non-flash path): `torch.split(t, lengths.tolist(), dim=2)` per image chunk from cu_seqlens.

Source: huggingface/transformers@v5.23.0:src/transformers/models/cohere_compass/modeling_cohere_compass.py:738-818 (the same block in qwen2_vl, glm4v, exaone4_5, ...)
Kept: the fused qkv reshape/permute/unbind, rotary application, the
transposes, the flash-attention switch on config, and the "process each
chunk separately" path: lengths from cu_seqlens diffs, tolist, split of q/k/v,
per-chunk eager attention and cat.
Simplified: rotary is cos/sin multiplies; eager attention inline; 2 heads of 4.
"""
import torch
from torch import nn


def eager_attention_forward(module, query, key, value, attention_mask, scaling, dropout=0.0, **kwargs):
    attn_weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    attn_weights = nn.functional.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
    attn_output = torch.matmul(attn_weights, value).transpose(1, 2).contiguous()
    return attn_output, attn_weights


class Config:
    _attn_implementation = "eager"


class VisionAttention(nn.Module):
    def __init__(self, dim=8, num_heads=2):
        super().__init__()
        self.config = Config()
        self.num_heads = num_heads
        self.scaling = (dim // num_heads) ** -0.5
        self.attention_dropout = 0.0
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, hidden_states, cu_seqlens, position_embeddings=None, max_seqlen=None):
        seq_length = hidden_states.shape[0]
        query_states, key_states, value_states = self.qkv(hidden_states).reshape(seq_length, 3, self.num_heads, -1).permute(1, 0, 2, 3).unbind(0)
        cos, sin = position_embeddings
        query_states, key_states = query_states * cos + query_states * sin, key_states * cos + key_states * sin
        query_states = query_states.transpose(0, 1).unsqueeze(0)
        key_states = key_states.transpose(0, 1).unsqueeze(0)
        value_states = value_states.transpose(0, 1).unsqueeze(0)
        if self.config._attn_implementation == "flash_attention_2":
            raise NotImplementedError
        else:
            lengths = cu_seqlens[1:] - cu_seqlens[:-1]
            splits = [torch.split(tensor, lengths.tolist(), dim=2) for tensor in (query_states, key_states, value_states)]
            attn_outputs = [
                eager_attention_forward(self, q, k, v, attention_mask=None, scaling=self.scaling,
                                        dropout=0.0 if not self.training else self.attention_dropout, is_causal=False)[0]
                for q, k, v in zip(*splits)
            ]
            attn_output = torch.cat(attn_outputs, dim=1)
        attn_output = attn_output.reshape(seq_length, -1).contiguous()
        return self.proj(attn_output)


attn = torch.compile(VisionAttention())


def make():
    torch.manual_seed(0)
    cos, sin = torch.rand(6, 1, 4), torch.rand(6, 1, 4)
    return VisionAttention(), [(torch.randn(6, 8), torch.tensor([0, 4, 6]), (cos, sin))]
