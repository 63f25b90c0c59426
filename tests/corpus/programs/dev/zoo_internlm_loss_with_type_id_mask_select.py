"""InternLM LossWithTypeId.update: per-token losses are filtered with a boolean mask (`loss_list[labels != -100]`), accumulated into metric buffers, and with dataset types the losses are bucketed per type and zero-padded when `len(...) < self.total_type_count`.

Source: InternLM/InternLM@220953d7e5031da44fbe94e0d0b2530503897189:internlm/model/metrics.py:188-252
Kept: LossWithTypeId.__init__ / update verbatim (list/tuple logits unwrap,
no_grad block, the type-id path with its zero padding).
Simplified: flash-attn's CrossEntropyLoss(reduction="none") is
F.cross_entropy(reduction="none"); torch_scatter's `scatter(src, index,
dim=0, reduce="sum")` is inlined as its scatter_sum for 1-D input (size from
`int(index.max()) + 1` when no dim_size is given, then `zeros(...).scatter_add_`;
that length is what the padding branch reacts to); the compiled
entry is an eval step that runs a small LM head and updates the metric.
"""
from typing import List

import torch
import torch.nn.functional as F


def scatter(src, index, dim=0, reduce="sum"):
    size = int(index.max()) + 1 if index.numel() > 0 else 0
    out = torch.zeros(size, dtype=src.dtype, device=src.device)
    return out.scatter_add_(dim, index, src)


class LossWithTypeId:
    """
    Notice the loss value computed here may be not the same with the main info loss,
    cause loss here is the reduced result of the data parallel.
    """

    def __init__(self, device, dp_pg, dataset_types: List[str] = None) -> None:
        self.device = device
        self.dp_pg = dp_pg

        self.loss = torch.Tensor([0.0]).to(device=device)
        self.token_num = torch.Tensor([0.0]).to(device=device)

        if dataset_types is not None:
            self.dataset_types = dataset_types
            self.total_type_count = len(dataset_types)
            self.ds_loss = torch.zeros(self.total_type_count, dtype=torch.float, device=device)
            self.ds_token_num = torch.zeros(self.total_type_count, dtype=torch.float, device=device)

        self.loss_fn = lambda logits, labels: F.cross_entropy(logits, labels, reduction="none", ignore_index=-100)

    def update(self, logits, labels, type_ids=None):
        with torch.no_grad():
            if isinstance(logits, (list, tuple)):
                logits = logits[0]
            logits = logits.contiguous().view(-1, logits.size(-1))
            labels = labels.contiguous().view(-1)
            loss_list = self.loss_fn(logits, labels)

            cond = labels != -100
            real_loss_list = loss_list[cond]
            self.loss += real_loss_list.sum()
            self.token_num += real_loss_list.numel()

            if hasattr(self, "total_type_count"):
                type_ids = type_ids.contiguous().view(-1).to(self.device)
                real_type_ids = type_ids[cond]

                loss_list_type = scatter(real_loss_list, real_type_ids, dim=0, reduce="sum")
                token_num_type = scatter(torch.ones_like(real_loss_list), real_type_ids, dim=0, reduce="sum")

                if len(loss_list_type) < self.total_type_count:
                    loss_list_type = torch.cat(
                        [loss_list_type, loss_list_type.new_zeros(self.total_type_count - len(loss_list_type))]
                    )
                    token_num_type = torch.cat(
                        [token_num_type, token_num_type.new_zeros(self.total_type_count - len(token_num_type))]
                    )
                self.ds_loss += loss_list_type
                self.ds_token_num += token_num_type


class TinyLM(torch.nn.Module):
    def __init__(self, vocab=10, hidden=8):
        super().__init__()
        self.embedding = torch.nn.Embedding(vocab, hidden)
        self.head = torch.nn.Linear(hidden, vocab)

    def forward(self, input_ids):
        return self.head(torch.tanh(self.embedding(input_ids)))


def evaluate_step(model, metric, input_ids, labels, type_ids):
    logits = model(input_ids)
    metric.update(logits, labels, type_ids)
    return logits


evaluate_step_compiled = torch.compile(evaluate_step)


def make():
    torch.manual_seed(0)
    model = TinyLM().eval()
    metric = LossWithTypeId("cpu", None, dataset_types=["en", "cn", "code"])
    ids = torch.randint(0, 10, (2, 5))
    labels = torch.randint(0, 10, (2, 5))
    labels[1, 3:] = -100
    all_types = torch.tensor([[0, 1, 2, 0, 1], [2, 2, 1, 0, 0]])
    first_type_only = torch.zeros(2, 5, dtype=torch.long)
    return evaluate_step, [
        (model, metric, ids, labels, all_types),
        (model, metric, ids, labels, first_type_only),
    ]
