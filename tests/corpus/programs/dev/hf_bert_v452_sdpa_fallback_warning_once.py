"""BERT SDPA attention at v4.52.4: `output_attentions` or a head mask triggers `logger.warning_once` and the eager fallback.

Source: huggingface/transformers@v4.52.4:src/transformers/models/bert/modeling_bert.py:232-330,331-422
Kept: the BertSdpaSelfAttention.forward guard (position_embedding_type /
output_attentions / head_mask) with warning_once and the super().forward
fallback returning (context, probs); the SDPA path with transpose_for_scores,
the cross-attention current_states switch and the is_causal flag; the
`warning_once` lru_cache patch from transformers.utils.logging.
Simplified: BertSelfAttention.forward (eager) keeps the mask add, softmax,
head mask multiply; no cache; 2 heads of 4.
"""
import functools
import logging
import math

import torch
from torch import nn

logger = logging.getLogger(__name__)


@functools.lru_cache(None)
def warning_once(self, *args, **kwargs):
    self.warning(*args, **kwargs)


logging.Logger.warning_once = warning_once


class BertSelfAttention(nn.Module):
    def __init__(self, hidden_size=8, num_attention_heads=2):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.all_head_size = hidden_size
        self.query = nn.Linear(hidden_size, hidden_size)
        self.key = nn.Linear(hidden_size, hidden_size)
        self.value = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(0.0)
        self.position_embedding_type = "absolute"
        self.is_decoder = False

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None, head_mask=None, encoder_hidden_states=None, encoder_attention_mask=None, past_key_value=None, output_attentions=False):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            attention_scores = attention_scores + attention_mask
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        if head_mask is not None:
            attention_probs = attention_probs * head_mask
        context_layer = torch.matmul(attention_probs, value_layer).permute(0, 2, 1, 3).contiguous()
        context_layer = context_layer.view(context_layer.size()[:-2] + (self.all_head_size,))
        return (context_layer, attention_probs) if output_attentions else (context_layer,)


class BertSdpaSelfAttention(BertSelfAttention):
    def forward(self, hidden_states, attention_mask=None, head_mask=None, encoder_hidden_states=None, encoder_attention_mask=None, past_key_value=None, output_attentions=False):
        if self.position_embedding_type != "absolute" or output_attentions or head_mask is not None:
            logger.warning_once(
                "BertSdpaSelfAttention is used but `torch.nn.functional.scaled_dot_product_attention` does not support "
                "non-absolute `position_embedding_type` or `output_attentions=True` or `head_mask`. Falling back to "
                "the manual attention implementation, but specifying the manual implementation will be required from "
                "Transformers version v5.0.0 onwards. This warning can be removed using the argument "
                '`attn_implementation="eager"` when loading the model.'
            )
            return super().forward(hidden_states, attention_mask, head_mask, encoder_hidden_states, encoder_attention_mask, past_key_value, output_attentions)
        bsz, tgt_len, _ = hidden_states.size()
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        is_cross_attention = encoder_hidden_states is not None
        current_states = encoder_hidden_states if is_cross_attention else hidden_states
        attention_mask = encoder_attention_mask if is_cross_attention else attention_mask
        key_layer = self.transpose_for_scores(self.key(current_states))
        value_layer = self.transpose_for_scores(self.value(current_states))
        is_causal = self.is_decoder and not is_cross_attention and attention_mask is None and tgt_len > 1
        attn_output = torch.nn.functional.scaled_dot_product_attention(query_layer, key_layer, value_layer, attn_mask=attention_mask, dropout_p=0.0, is_causal=is_causal)
        attn_output = attn_output.transpose(1, 2).reshape(bsz, tgt_len, self.all_head_size)
        return (attn_output, None)


attention = torch.compile(BertSdpaSelfAttention())


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 4, 8)
    return BertSdpaSelfAttention(), [(x,), (x, None, None, None, None, None, True)]
