"""RWKV forward prologue: `logger.warning_once` when an unused attention_mask is passed, and
`if self.training == self.layers_are_rescaled: self._rescale_layers()` mutating weights under no_grad.

Source: huggingface/transformers@v5.23.0:src/transformers/models/rwkv/modeling_rwkv.py:540-560, 615-637
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): RwkvModel eval+train,
`modeling_rwkv.py:550 logger.warning_once("`attention_mask` was passed, but it is unused in this model.")`.
Kept: the use_cache default, the warning, the rescale check and `_rescale_layers` (training multiply /
eval divide by `2 ** int(block_id // rescale_every)`, the `layers_are_rescaled` flag), the embeddings.
Simplified: blocks hold only the two rescaled Linear layers; no quantization branches; no recurrence.
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


class RwkvConfig:
    vocab_size = 12
    hidden_size = 4
    num_hidden_layers = 2
    rescale_every = 1
    use_cache = True


class RwkvBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = nn.Module()
        self.attention.output = nn.Linear(config.hidden_size, config.hidden_size, bias=False)
        self.feed_forward = nn.Module()
        self.feed_forward.value = nn.Linear(config.hidden_size, config.hidden_size, bias=False)

    def forward(self, hidden):
        return hidden + self.feed_forward.value(torch.relu(self.attention.output(hidden)))


class RwkvModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.blocks = nn.ModuleList([RwkvBlock(config) for _ in range(config.num_hidden_layers)])
        self.layers_are_rescaled = False

    def forward(self, input_ids=None, attention_mask=None, use_cache=None):
        use_cache = use_cache if use_cache is not None else (self.config.use_cache if not self.training else False)

        if attention_mask is not None:
            logger.warning_once("`attention_mask` was passed, but it is unused in this model.")

        if self.training == self.layers_are_rescaled:
            self._rescale_layers()

        hidden_states = self.embeddings(input_ids)
        for block in self.blocks:
            hidden_states = block(hidden_states)
        return hidden_states

    def _rescale_layers(self):
        # Layers should be rescaled for inference only.
        if self.layers_are_rescaled == (not self.training):
            return
        if self.config.rescale_every > 0:
            with torch.no_grad():
                for block_id, block in enumerate(self.blocks):
                    if self.training:
                        block.attention.output.weight.mul_(2 ** int(block_id // self.config.rescale_every))
                        block.feed_forward.value.weight.mul_(2 ** int(block_id // self.config.rescale_every))
                    else:
                        block.attention.output.weight.div_(2 ** int(block_id // self.config.rescale_every))
                        block.feed_forward.value.weight.div_(2 ** int(block_id // self.config.rescale_every))

        self.layers_are_rescaled = not self.training


rwkv = torch.compile(RwkvModel(RwkvConfig()).eval())


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[1, 2, 3]])
    return RwkvModel(RwkvConfig()).eval(), [(ids,), (ids, torch.ones(1, 3))]
