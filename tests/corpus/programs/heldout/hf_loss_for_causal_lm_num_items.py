"""transformers ForCausalLMLoss: reduction picked by `num_items_in_batch is not None`, torch.is_tensor check (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/loss/loss_utils.py:34-73
Kept: fixed_cross_entropy (sum/mean switch, is_tensor + .to(device), the
division), ForCausalLMLoss (float upcast, pad-and-shift labels, view,
shift_labels override), called the way the Trainer's compiled training step
passes num_items_in_batch as a tensor (gradient accumulation) or not at all.
Simplified: logits come from a linear LM head; vocab 6.
"""
import torch
from torch import nn


def fixed_cross_entropy(source, target, num_items_in_batch=None, ignore_index: int = -100, **kwargs):
    reduction = "sum" if num_items_in_batch is not None else "mean"
    loss = nn.functional.cross_entropy(source, target, ignore_index=ignore_index, reduction=reduction)
    if reduction == "sum":
        if torch.is_tensor(num_items_in_batch):
            num_items_in_batch = num_items_in_batch.to(loss.device)
        loss = loss / num_items_in_batch
    return loss


def ForCausalLMLoss(logits, labels, vocab_size: int, num_items_in_batch=None, ignore_index: int = -100, shift_labels=None, **kwargs):
    logits = logits.float()
    if shift_labels is None:
        labels = nn.functional.pad(labels, (0, 1), value=ignore_index)
        shift_labels = labels[..., 1:].contiguous()
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    shift_labels = shift_labels.to(logits.device)
    loss = fixed_cross_entropy(logits, shift_labels, num_items_in_batch, ignore_index, **kwargs)
    return loss


class CausalLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(6, 8)
        self.lm_head = nn.Linear(8, 6)
        self.vocab_size = 6

    def forward(self, input_ids, labels=None, num_items_in_batch=None):
        logits = self.lm_head(self.embed(input_ids))
        loss = None
        if labels is not None:
            loss = ForCausalLMLoss(logits, labels, self.vocab_size, num_items_in_batch=num_items_in_batch)
        return (loss, logits) if loss is not None else (logits,)


model = torch.compile(CausalLM())


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[1, 2, 3, 4], [2, 2, 5, 0]])
    labels = torch.tensor([[1, 2, 3, 4], [2, 2, -100, -100]])
    return CausalLM(), [(ids,), (ids, labels), (ids, labels, torch.tensor(6))]
