"""T5Gemma's training warning about the attention implementation, guarded with
`and not is_torchdynamo_compiling()` (the merged fix).

Source: https://github.com/huggingface/transformers/pull/39052 (src/transformers/models/t5gemma/modeling_t5gemma.py:1171)
Kept: the fixed condition `self.training and self.config._attn_implementation != "eager" and not
is_torchdynamo_compiling()` and the warning_once it guards.
Simplified: `is_torchdynamo_compiling` is the torch.compiler check transformers wraps; one Linear as the model.
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


def is_torchdynamo_compiling():
    return torch.compiler.is_compiling()


class T5GemmaConfig:
    _attn_implementation = "sdpa"


class T5GemmaForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.lm_head = nn.Linear(6, 6)

    def forward(self, decoder_inputs_embeds, labels=None):
        if self.training and self.config._attn_implementation != "eager" and not is_torchdynamo_compiling():
            logger.warning_once(
                "It is strongly recommended to train T5Gemma models with the `eager` attention implementation "
                f"instead of `{self.config._attn_implementation}`. Use `eager` with "
                "`AutoModelForCausalLM.from_pretrained('<path-to-checkpoint>', attn_implementation='eager')`."
            )
        logits = self.lm_head(decoder_inputs_embeds)
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits.view(-1, 6), labels.view(-1))
        return loss, logits


model = torch.compile(T5GemmaForConditionalGeneration(T5GemmaConfig()).train())


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 6)
    return T5GemmaForConditionalGeneration(T5GemmaConfig()).train(), [(x,), (x, torch.tensor([[1, 2, 3]]))]
