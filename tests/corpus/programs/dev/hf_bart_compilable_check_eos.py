"""BART sequence classification at v5.23: the eos checks go through `torch_compilable_check` (torch._check_with).

Source: huggingface/transformers@v5.23.0:src/transformers/models/bart/modeling_bart.py:1036-1052
Kept: eos_mask, torch_compilable_check with its is_tracing shortcut and the
msg callable, the unique_consecutive().numel() condition, the boolean-mask
read `hidden_states[eos_mask, :]` and the per-example view.
Simplified: the model is an embedding; torch_compilable_check is copied from
utils/import_utils.py:1947-1995 without the environment switch.
"""
import torch
from torch import nn


def is_tracing():
    return torch.compiler.is_compiling() or torch.jit.is_tracing()


def torch_compilable_check(cond, msg, error_type=ValueError):
    if is_tracing():
        if isinstance(cond, torch.Tensor):
            torch._check_tensor_all(cond)
        else:
            torch._check(cond)
        return
    if not callable(msg):
        def msg_callable():
            return msg
    else:
        msg_callable = msg
    if callable(cond):
        cond = cond()
    if isinstance(cond, torch.Tensor):
        torch._check_tensor_all_with(error_type, cond, msg_callable)
    else:
        torch._check_with(error_type, cond, msg_callable)


class BartForSequenceClassification(nn.Module):
    eos_token_id = 2

    def __init__(self):
        super().__init__()
        self.model = nn.Embedding(10, 8)
        self.classification_head = nn.Linear(8, 3)

    def forward(self, input_ids):
        hidden_states = self.model(input_ids)
        eos_mask = input_ids.eq(self.eos_token_id).to(hidden_states.device)
        torch_compilable_check(
            torch.unique_consecutive(eos_mask.sum(1)).numel() == 1,
            "All examples must have the same number of <eos> tokens.",
        )
        selected = hidden_states[eos_mask, :]
        torch_compilable_check(
            selected.shape[0] // hidden_states.shape[0] >= 1,
            "Each example must contain at least one <eos> token.",
        )
        sentence_representation = selected.view(hidden_states.size(0), -1, hidden_states.size(-1))[:, -1, :]
        return self.classification_head(sentence_representation)


def make():
    torch.manual_seed(0)
    return BartForSequenceClassification(), [(torch.tensor([[0, 5, 6, 2], [0, 7, 2, 1]]),)]


compiled = torch.compile(BartForSequenceClassification(), fullgraph=False)
