"""Qwen3 `_update_causal_mask` for flash attention: `attention_mask[:, -1].sum().item() != batch` detects right
padding, then `0.0 in attention_mask` decides whether a mask is needed.

Source: https://github.com/huggingface/transformers/pull/37944 (graph break from Tensor.item() in
`Qwen3Model._update_causal_mask`, modeling_qwen3.py:540 in transformers 4.51)
Kept: the flash-attention branch of `_update_causal_mask` as in transformers 4.51 Qwen2/Qwen3 (the right-padding
`.item()` check with its ValueError, the `0.0 in attention_mask` test, the None return) and a forward that
compiles the whole model as the PR's user did.
Simplified: the decoder is one Linear; only the flash-attention implementation is modelled.
"""
import torch
from torch import nn


class Qwen3Config:
    _attn_implementation = "flash_attention_2"
    hidden_size = 4


class Qwen3Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layer = nn.Linear(config.hidden_size, config.hidden_size)

    def _update_causal_mask(self, attention_mask, input_tensor, cache_position, past_key_values,
                            output_attentions=False):
        if self.config._attn_implementation == "flash_attention_2":
            if attention_mask is not None and past_key_values is not None:
                is_padding_right = attention_mask[:, -1].sum().item() != input_tensor.size()[0]
                if is_padding_right:
                    raise ValueError(
                        "You are attempting to perform batched generation with padding_side='right'"
                        " this may lead to unexpected behaviour for Flash Attention version of Qwen3. Make sure to "
                        " call `tokenizer.padding_side  = 'left'` before tokenizing the input. "
                    )
            if attention_mask is not None and 0.0 in attention_mask:
                return attention_mask
            return None
        raise NotImplementedError("only the flash-attention path is part of this translation")

    def forward(self, inputs_embeds, attention_mask=None, past_key_values=None):
        cache_position = torch.arange(inputs_embeds.shape[1], device=inputs_embeds.device)
        causal_mask = self._update_causal_mask(attention_mask, inputs_embeds, cache_position, past_key_values)
        hidden_states = self.layer(inputs_embeds)
        if causal_mask is not None:
            hidden_states = hidden_states * causal_mask[:, :, None]
        return hidden_states


model = torch.compile(Qwen3Model(Qwen3Config()))

RAISING_INPUTS = {3: "ValueError"}


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4)
    left_padded = torch.tensor([[0.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    right_padded = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    return Qwen3Model(Qwen3Config()), [
        (x, torch.ones(2, 3)),
        (x, left_padded),
        (x, left_padded, object()),
        (x, right_padded, object()),
    ]
