"""LED encoder: attention_mask comes back through `_pad_to_window_size`'s tuple, then `.flatten().any().item()`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/led/modeling_led.py:1293-1346,1348-1470
Kept: _merge_to_attention_mask, _pad_to_window_size (attention_window from
config, the even-window ValueError, padding_len, logger.warning_once, the
4-tuple return), the inverted mask, is_index_masked/global and `.item()`,
and the layer loop receiving is_global_attn.
Simplified: embed_positions and layers are linear; _prepare_4d_attention_mask_inverted
is inlined; hidden size 8, window 4.
"""
import functools
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


@functools.lru_cache(None)
def warning_once(self, *args, **kwargs):
    self.warning(*args, **kwargs)


logging.Logger.warning_once = warning_once


class LEDConfig:
    attention_window = [4, 4]
    pad_token_id = 1
    d_model = 8
    encoder_layers = 2


class LEDEncoderLayer(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, hidden_states, attention_mask=None, is_index_masked=None, is_index_global_attn=None, is_global_attn=None):
        out = self.fc(hidden_states).masked_fill(is_index_masked[..., None], 0.0)
        if is_global_attn:
            out = out + (hidden_states * is_index_global_attn[..., None]).sum(1, keepdim=True)
        return (out,)


class LEDEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(16, config.d_model, padding_idx=config.pad_token_id)
        self.layers = nn.ModuleList([LEDEncoderLayer(config.d_model) for _ in range(config.encoder_layers)])

    def _merge_to_attention_mask(self, attention_mask, global_attention_mask):
        if attention_mask is not None:
            attention_mask = attention_mask * (global_attention_mask + 1)
        else:
            attention_mask = global_attention_mask + 1
        return attention_mask

    def _pad_to_window_size(self, input_ids, attention_mask, inputs_embeds, pad_token_id):
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
            logger.warning_once(
                f"Input ids are automatically padded from {seq_len} to {seq_len + padding_len} to be a multiple of "
                f"`config.attention_window`: {attention_window}"
            )
            if input_ids is not None:
                input_ids = nn.functional.pad(input_ids, (0, padding_len), value=pad_token_id)
            if inputs_embeds is not None:
                input_ids_padding = inputs_embeds.new_full((batch_size, padding_len), self.config.pad_token_id, dtype=torch.long)
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
        if attention_mask is not None:
            inverted = 1.0 - (attention_mask != 0).to(inputs_embeds.dtype)
            attention_mask = inverted.masked_fill(inverted.bool(), torch.finfo(inputs_embeds.dtype).min) + (attention_mask == 2)
        is_index_masked = attention_mask < 0
        is_index_global_attn = attention_mask > 0
        is_global_attn = is_index_global_attn.flatten().any().item()
        hidden_states = inputs_embeds
        for encoder_layer in self.layers:
            layer_outputs = encoder_layer(
                hidden_states,
                attention_mask=attention_mask,
                is_index_masked=is_index_masked,
                is_index_global_attn=is_index_global_attn,
                is_global_attn=is_global_attn,
            )
            hidden_states = layer_outputs[0]
        if padding_len > 0:
            hidden_states = hidden_states[:, :-padding_len]
        return hidden_states


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[2, 5, 6, 7, 8, 3]])
    no_global = torch.zeros_like(ids)
    first_global = no_global.clone()
    first_global[:, 0] = 1
    return LEDEncoder(LEDConfig()), [(ids, None, no_global), (ids[:, :4], None, first_global[:, :4])]


def main():
    encoder = torch.compile(LEDEncoder(LEDConfig()))
    return encoder
