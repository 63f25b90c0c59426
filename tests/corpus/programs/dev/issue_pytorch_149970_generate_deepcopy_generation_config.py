"""`generation_config = copy.deepcopy(generation_config)` at the top of a compiled `generate`
("copy.deepcopy UserDefinedObjectVariable(GenerationConfig)").

Source: https://github.com/pytorch/pytorch/issues/149970 (transformers generation/utils.py:1348 in `generate`,
reached from DeepSeek-VL2); the same construct is case 2 of pytorch/pytorch#115122 (hf_T5_generate).
Kept: the deepcopy of the config object, `update(**kwargs)` on the copy returning unused kwargs, and a greedy
loop bounded by `max_new_tokens` from the copied config.
Simplified: GenerationConfig is a small class; the model is an Embedding + Linear.
Torch 2.13 traces the deepcopy of this plain config object and logs no graph break.
"""
import copy

import torch
from torch import nn


class GenerationConfig:
    def __init__(self, max_new_tokens=3, do_sample=False):
        self.max_new_tokens = max_new_tokens
        self.do_sample = do_sample

    def update(self, **kwargs):
        to_remove = []
        for key, value in kwargs.items():
            if hasattr(self, key):
                setattr(self, key, value)
                to_remove.append(key)
        return {key: value for key, value in kwargs.items() if key not in to_remove}


class TinyLM(nn.Module):
    def __init__(self, vocab=10, dim=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab)
        self.generation_config = GenerationConfig()

    def generate(self, input_ids, generation_config=None, **kwargs):
        if generation_config is None:
            generation_config = self.generation_config
        generation_config = copy.deepcopy(generation_config)
        model_kwargs = generation_config.update(**kwargs)  # All unused kwargs must be model kwargs
        for _ in range(generation_config.max_new_tokens):
            logits = self.head(self.embed(input_ids))[:, -1]
            next_tokens = logits.argmax(dim=-1, keepdim=True)
            input_ids = torch.cat([input_ids, next_tokens], dim=-1)
        return input_ids, model_kwargs


model = TinyLM()
compiled_generate = torch.compile(model.generate)


def make():
    torch.manual_seed(0)
    m = TinyLM()
    return m.generate, [(torch.tensor([[1, 2]]),), (torch.tensor([[3]]), GenerationConfig(max_new_tokens=2))]
