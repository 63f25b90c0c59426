"""GPT-J sequence classification at v5.23: last non-pad token via argmax of `token_indices * non_pad_mask`, warning_once for inputs_embeds.

Source: huggingface/transformers@v5.23.0:src/transformers/models/gptj/modeling_gptj.py:670-764
Kept: the pad_token_id None ValueError for batch > 1, the three-way
last_non_pad_token computation (-1 / argmax over the int mask / -1 plus
logger.warning_once when only inputs_embeds are given), the advanced-index
pooling with arange, and the problem_type inference + loss selection.
Simplified: the transformer is an embedding + linear; 3 labels; warning_once
is the transformers lru_cache patch.
"""
import functools
import logging

import torch
from torch import nn
from torch.nn import CrossEntropyLoss, MSELoss

logger = logging.getLogger(__name__)


@functools.lru_cache(None)
def warning_once(self, *args, **kwargs):
    self.warning(*args, **kwargs)


logging.Logger.warning_once = warning_once


class GPTJConfig:
    pad_token_id = 0
    num_labels = 3
    problem_type = None


class GPTJForSequenceClassification(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.wte = nn.Embedding(10, 8)
        self.transformer = nn.Linear(8, 8)
        self.score = nn.Linear(8, config.num_labels, bias=False)

    def forward(self, input_ids=None, inputs_embeds=None, labels=None):
        if inputs_embeds is None:
            inputs_embeds = self.wte(input_ids)
        transformer_outputs = (self.transformer(inputs_embeds),)
        hidden_states = transformer_outputs[0]
        logits = self.score(hidden_states)
        if input_ids is not None:
            batch_size = input_ids.shape[0]
        else:
            batch_size = inputs_embeds.shape[0]
        if self.config.pad_token_id is None and batch_size != 1:
            raise ValueError("Cannot handle batch sizes > 1 if no padding token is defined.")
        if self.config.pad_token_id is None:
            last_non_pad_token = -1
        elif input_ids is not None:
            non_pad_mask = (input_ids != self.config.pad_token_id).to(logits.device, torch.int32)
            token_indices = torch.arange(input_ids.shape[-1], device=logits.device, dtype=torch.int32)
            last_non_pad_token = (token_indices * non_pad_mask).argmax(-1)
        else:
            last_non_pad_token = -1
            logger.warning_once(
                f"{self.__class__.__name__} will not detect padding tokens in `inputs_embeds`. Results may be "
                "unexpected if using padding tokens in conjunction with `inputs_embeds.`"
            )
        pooled_logits = logits[torch.arange(batch_size, device=logits.device), last_non_pad_token]
        loss = None
        if labels is not None:
            labels = labels.to(pooled_logits.device)
            if self.config.problem_type is None:
                if self.num_labels == 1:
                    self.config.problem_type = "regression"
                elif self.num_labels > 1 and (labels.dtype == torch.long or labels.dtype == torch.int):
                    self.config.problem_type = "single_label_classification"
                else:
                    self.config.problem_type = "multi_label_classification"
            if self.config.problem_type == "regression":
                loss = MSELoss()(pooled_logits.squeeze(), labels.squeeze())
            elif self.config.problem_type == "single_label_classification":
                loss = CrossEntropyLoss()(pooled_logits.view(-1, self.num_labels), labels.view(-1))
        return (loss, pooled_logits) if loss is not None else (pooled_logits,)


model = torch.compile(GPTJForSequenceClassification(GPTJConfig()))


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[4, 5, 6, 0], [7, 8, 0, 0]])
    return GPTJForSequenceClassification(GPTJConfig()), [(ids, None, torch.tensor([1, 2])), (None, torch.randn(2, 4, 8))]
