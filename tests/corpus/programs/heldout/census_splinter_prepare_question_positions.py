"""Splinter pretraining: `_prepare_question_positions` uses `torch.where(input_ids == question_token_id)`,
`torch.bincount(rows)`, `searchsorted` and `torch.full((b, num_questions.max()), ...)` sized by data.

Source: huggingface/transformers@v5.23.0:src/transformers/models/splinter/modeling_splinter.py:640-737
Census: penguinwu/oss-model-graph-break-corpus sweeps SplinterModel / SplinterForPreTraining; the bincount/`.max()`
size is the helper a pretraining forward calls when question positions are not given.
Kept: the forward's three-way question_positions validation (two TypeErrors), `_prepare_question_positions`
verbatim with transformers' `torch_compilable_check` (torch._check while compiling), a gather of start logits.
Simplified: the encoder is an Embedding; the QASS layer is a dot product.
"""
import torch
from torch import nn


def torch_compilable_check(cond, msg, error_type=ValueError):
    if torch.compiler.is_compiling():
        if isinstance(cond, torch.Tensor):
            torch._check_tensor_all(cond)
        else:
            torch._check(cond)
        return
    if not cond:
        raise error_type(msg)


class SplinterConfig:
    question_token_id = 9
    pad_token_id = 0
    vocab_size = 10
    hidden_size = 4


class SplinterForPreTraining(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.splinter = nn.Embedding(config.vocab_size, config.hidden_size)

    def forward(self, input_ids=None, question_positions=None, start_positions=None, end_positions=None,
                inputs_embeds=None):
        if question_positions is None and start_positions is not None and end_positions is not None:
            raise TypeError("question_positions must be specified in order to calculate the loss")

        elif question_positions is None and input_ids is None:
            raise TypeError("question_positions must be specified when inputs_embeds is used")

        elif question_positions is None:
            question_positions = self._prepare_question_positions(input_ids)

        sequence_output = self.splinter(input_ids)
        question_reps = torch.gather(
            sequence_output, 1, question_positions[..., None].expand(-1, -1, sequence_output.shape[-1])
        )
        start_logits = torch.einsum("bqd,bsd->bqs", question_reps, sequence_output)
        return start_logits

    def _prepare_question_positions(self, input_ids):
        rows, flat_positions = torch.where(input_ids == self.config.question_token_id)
        num_questions = torch.bincount(rows)
        torch_compilable_check(
            num_questions.size(0) == input_ids.size(0),
            "All samples in the batch must have at least one question token.",
        )
        # rows is sorted: col[i] = i - first_occurrence(rows[i])
        first_idx = torch.searchsorted(rows, rows, side="left")
        cols = torch.arange(rows.size(0), device=rows.device) - first_idx
        positions = torch.full(
            (input_ids.size(0), num_questions.max()),
            self.config.pad_token_id,
            dtype=torch.long,
            device=input_ids.device,
        )
        positions[rows, cols] = flat_positions
        return positions


model = torch.compile(SplinterForPreTraining(SplinterConfig()))


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[1, 9, 3, 9], [9, 2, 3, 4]])
    return SplinterForPreTraining(SplinterConfig()), [(ids,), (ids, torch.tensor([[1, 3], [0, 0]]))]
