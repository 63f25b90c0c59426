"""transformers Trainer LabelSmoother: shift labels, ignore-index padding mask, gathered NLL with masked_fill_, denominator from numel or num_items_in_batch (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/trainer_pt_utils.py:435-481
Kept: the LabelSmoother dataclass verbatim (dict/tuple model output, the
shift_labels option, dim alignment, clamp, gather, float32 smoothed sum,
masked fills, the three denominator cases) used on a model output inside a
compiled training loss.
Simplified: the model is an embedding + head; vocab 6.
"""
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class LabelSmoother:
    epsilon: float = 0.1
    ignore_index: int = -100

    def __call__(self, model_output, labels, shift_labels=False, num_items_in_batch=None):
        logits = model_output["logits"] if isinstance(model_output, dict) else model_output[0]
        if shift_labels:
            logits = logits[..., :-1, :].contiguous()
            labels = labels[..., 1:].contiguous()
        log_probs = -nn.functional.log_softmax(logits, dim=-1)
        if labels.dim() == log_probs.dim() - 1:
            labels = labels.unsqueeze(-1)
        padding_mask = labels.eq(self.ignore_index)
        labels = torch.clamp(labels, min=0)
        nll_loss = log_probs.gather(dim=-1, index=labels)
        smoothed_loss = log_probs.sum(dim=-1, keepdim=True, dtype=torch.float32)
        nll_loss.masked_fill_(padding_mask, 0.0)
        smoothed_loss.masked_fill_(padding_mask, 0.0)
        if num_items_in_batch is None:
            denominator = padding_mask.numel() - padding_mask.long().sum()
        elif torch.is_tensor(num_items_in_batch):
            denominator = num_items_in_batch.to(nll_loss.device)
        else:
            denominator = num_items_in_batch
        nll_loss = nll_loss.sum() / denominator
        smoothed_loss = smoothed_loss.sum() / (denominator * log_probs.shape[-1])
        return (1 - self.epsilon) * nll_loss + self.epsilon * smoothed_loss


label_smoother = LabelSmoother(epsilon=0.1)
model = nn.Sequential(nn.Embedding(6, 8), nn.Linear(8, 6))


@torch.compile
def compute_loss(input_ids, labels, num_items_in_batch=None):
    outputs = {"logits": model(input_ids)}
    return label_smoother(outputs, labels, shift_labels=True, num_items_in_batch=num_items_in_batch)


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[1, 2, 3, 4], [2, 3, 4, 5]])
    labels = torch.tensor([[1, 2, 3, 4], [2, 3, -100, -100]])
    return compute_loss._torchdynamo_orig_callable, [(ids, labels), (ids, labels, torch.tensor(4)), (ids, labels, 4)]
