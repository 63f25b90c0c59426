"""Gemma3 text model: `logger.warning_once` about `use_cache=True` with gradient checkpointing in training
("Logger not supported for non-export cases").

Source: https://github.com/huggingface/trl/issues/3839 (transformers 4.5x models/gemma3/modeling_gemma3.py:585-592)
Kept: the `self.gradient_checkpointing and self.training and use_cache` gate with the warning and the
`use_cache = False` reset, the logger from transformers' `logging.get_logger` style (a Logger with a cached
`warning_once`).
Simplified: decoder layers are one Linear; the training entry compiles `model.forward` as GRPO trainers do.
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


class Gemma3TextConfig:
    use_cache = True
    hidden_size = 8


class Gemma3TextModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.gradient_checkpointing = True
        self.layer = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, inputs_embeds, use_cache=None):
        use_cache = use_cache if use_cache is not None else self.config.use_cache
        if self.gradient_checkpointing and self.training and use_cache:
            logger.warning_once(
                "`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`."
            )
            use_cache = False
        hidden_states = self.layer(inputs_embeds)
        return hidden_states, use_cache


def grpo_step(model, batch):
    model.train()
    model.forward = torch.compile(model.forward)
    out, _ = model(batch)
    out.sum().backward()


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8)
    return Gemma3TextModel(Gemma3TextConfig()).train(), [(x,), (x, False)]
