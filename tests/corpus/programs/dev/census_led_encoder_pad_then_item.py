"""LED encoder: the attention mask comes back through `_pad_to_window_size`'s tuple, then `.item()` on it.

Source: huggingface/transformers@v5.23.0:src/transformers/models/led/modeling_led.py:1293-1450
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): LEDModel eval+train,
`modeling_led.py:1465 is_global_attn = is_index_global_attn.flatten().any().item()` and the
`logger.warning_once` in `_pad_to_window_size`.
Kept: `_merge_to_attention_mask`, `_pad_to_window_size` (window check, padding, warning_once, 4-tuple
return), the inverted mask conversion and the `.item()` global-attention flag.
Simplified: one Linear instead of the LED layers; warning_once is a small functools.cache helper.
"""
import functools
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


@functools.lru_cache(None)
def warning_once(msg):
    logger.warning(msg)


class LEDConfig:
    attention_window = 4
    pad_token_id = 1
    d_model = 8
    vocab_size = 11


class LEDEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.d_model)
        self.layer = nn.Linear(config.d_model, config.d_model)

    def _merge_to_attention_mask(self, attention_mask, global_attention_mask):
        if attention_mask is not None:
            attention_mask = attention_mask * (global_attention_mask + 1)
        else:
            attention_mask = global_attention_mask + 1
        return attention_mask

    def _pad_to_window_size(self, input_ids, attention_mask, inputs_embeds, pad_token_id):
        """A helper function to pad tokens and mask to work with implementation of Longformer self-attention."""
        attention_window = (
            self.config.attention_window
            if isinstance(self.config.attention_window, int)
            else max(self.config.attention_window)
        )
        if attention_window % 2 != 0:
            raise ValueError(f"`attention_window` should be an even value. Given {attention_window}")
        input_shape = input_ids.shape if input_ids is not None else inputs_embeds.shape
        batch_size, seq_len = input_shape[:2]

        padding_len = (attention_window - seq_len % attention_window) % attention_window
        if padding_len > 0:
            warning_once(
                f"Input ids are automatically padded from {seq_len} to {seq_len + padding_len} to be a multiple of "
                f"`config.attention_window`: {attention_window}"
            )
            if input_ids is not None:
                input_ids = nn.functional.pad(input_ids, (0, padding_len), value=pad_token_id)
            if inputs_embeds is not None:
                input_ids_padding = inputs_embeds.new_full((batch_size, padding_len), self.config.pad_token_id,
                                                           dtype=torch.long)
                inputs_embeds_padding = self.embed_tokens(input_ids_padding)
                inputs_embeds = torch.cat([inputs_embeds, inputs_embeds_padding], dim=-2)
            attention_mask = nn.functional.pad(attention_mask, (0, padding_len), value=False)
        return padding_len, input_ids, attention_mask, inputs_embeds

    def forward(self, input_ids=None, attention_mask=None, global_attention_mask=None):
        inputs_embeds = self.embed_tokens(input_ids)
        if attention_mask is None:
            attention_mask = torch.ones(inputs_embeds.size()[:-1], device=inputs_embeds.device, dtype=torch.long)
        if global_attention_mask is not None:
            attention_mask = self._merge_to_attention_mask(attention_mask, global_attention_mask)

        padding_len, input_ids, attention_mask, inputs_embeds = self._pad_to_window_size(
            input_ids=input_ids,
            attention_mask=attention_mask,
            inputs_embeds=inputs_embeds,
            pad_token_id=self.config.pad_token_id,
        )
        # [bsz, seq_len]; 1 -> 0.0 (local), 2 -> 1.0 (global), 0 -> -10000 (masked)
        attention_mask = (attention_mask.to(inputs_embeds.dtype) - 1.0) * 10000.0

        is_index_masked = attention_mask < 0
        is_index_global_attn = attention_mask > 0
        is_global_attn = is_index_global_attn.flatten().any().item()

        hidden_states = self.layer(inputs_embeds)
        if is_global_attn:
            hidden_states = hidden_states + inputs_embeds.mean(dim=1, keepdim=True)
        return hidden_states.masked_fill(is_index_masked[..., None], 0.0)


model = torch.compile(LEDEncoder(LEDConfig()))


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[2, 3, 4, 5, 6, 7]])
    glob = torch.tensor([[1, 0, 0, 0, 0, 0]])
    return LEDEncoder(LEDConfig()), [(ids,), (ids, None, glob), (ids[:, :4],)]
