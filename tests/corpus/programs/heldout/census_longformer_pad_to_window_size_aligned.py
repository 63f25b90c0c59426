"""Longformer `_pad_to_window_size` on inputs already a multiple of the window: the f-string `assert` on a
Python int and the `padding_len > 0` shape branch, then the merged global mask (no break when nothing is padded).

Source: huggingface/transformers@v5.23.0:src/transformers/models/longformer/modeling_longformer.py:1322-1385
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10) lists `modeling_longformer.py:1367
logger.warning_once(` for LongformerModel, reached only when padding is needed (sequence 7 vs window 4 in the
sweep); aligned inputs skip it.
Kept: `_pad_to_window_size` verbatim (assert with f-string, padding of ids/positions/embeds/mask/token types,
the warning) and `_merge_to_attention_mask`; the caller unpacks the 6-tuple.
Simplified: embeddings are one Embedding; the encoder is omitted; logger.warning_once is a cached Logger method.
"""
import functools
import logging

import torch
from torch import nn


class TransformersLogger(logging.Logger):
    @functools.lru_cache(None)
    def warning_once(self, *args, **kwargs):
        self.warning(*args, **kwargs)


logger = TransformersLogger(__name__)


class LongformerConfig:
    attention_window = [4, 4]
    pad_token_id = 1
    vocab_size = 12
    hidden_size = 4


class LongformerModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)

    def _pad_to_window_size(self, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                            pad_token_id):
        """A helper function to pad tokens and mask to work with implementation of Longformer self-attention."""
        # padding
        attention_window = (
            self.config.attention_window
            if isinstance(self.config.attention_window, int)
            else max(self.config.attention_window)
        )

        assert attention_window % 2 == 0, f"`attention_window` should be an even value. Given {attention_window}"
        input_shape = input_ids.shape if input_ids is not None else inputs_embeds.shape
        batch_size, seq_len = input_shape[:2]

        padding_len = (attention_window - seq_len % attention_window) % attention_window

        # this path should be recorded in the ONNX export, it is fine with padding_len == 0 as well
        if padding_len > 0:
            logger.warning_once(
                f"Input ids are automatically padded to be a multiple of `config.attention_window`: {attention_window}"
            )
            if input_ids is not None:
                input_ids = nn.functional.pad(input_ids, (0, padding_len), value=pad_token_id)
            if position_ids is not None:
                # pad with position_id = pad_token_id as in modeling_roberta.RobertaEmbeddings
                position_ids = nn.functional.pad(position_ids, (0, padding_len), value=pad_token_id)
            if inputs_embeds is not None:
                input_ids_padding = inputs_embeds.new_full(
                    (batch_size, padding_len),
                    self.config.pad_token_id,
                    dtype=torch.long,
                )
                inputs_embeds_padding = self.embeddings(input_ids_padding)
                inputs_embeds = torch.cat([inputs_embeds, inputs_embeds_padding], dim=-2)

            attention_mask = nn.functional.pad(
                attention_mask, (0, padding_len), value=0
            )  # no attention on the padding tokens
            token_type_ids = nn.functional.pad(token_type_ids, (0, padding_len), value=0)  # pad with token_type_id = 0

        return padding_len, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds

    def _merge_to_attention_mask(self, attention_mask, global_attention_mask):
        # longformer self attention expects attention mask to have 0 (no attn), 1 (local attn), 2 (global attn)
        # (global_attention_mask + 1) => 1 for local attention, 2 for global attention
        # => final attention_mask => 0 for no attention, 1 for local attention 2 for global attention
        if attention_mask is not None:
            attention_mask = attention_mask * (global_attention_mask + 1)
        else:
            # simply use `global_attention_mask` as `attention_mask`
            # if no `attention_mask` is given
            attention_mask = global_attention_mask + 1
        return attention_mask

    def forward(self, input_ids, attention_mask=None, global_attention_mask=None):
        token_type_ids = torch.zeros_like(input_ids)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if global_attention_mask is not None:
            attention_mask = self._merge_to_attention_mask(attention_mask, global_attention_mask)
        padding_len, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds = self._pad_to_window_size(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=token_type_ids,
            position_ids=None,
            inputs_embeds=None,
            pad_token_id=self.config.pad_token_id,
        )
        hidden = self.embeddings(input_ids) * attention_mask[..., None]
        return hidden[:, : hidden.shape[1] - padding_len]


longformer = torch.compile(LongformerModel(LongformerConfig()))


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[2, 3, 4, 5, 6, 7, 8, 9]])
    glob = torch.tensor([[1, 0, 0, 0, 0, 0, 0, 0]])
    return LongformerModel(LongformerConfig()), [(ids,), (ids, None, glob)]
