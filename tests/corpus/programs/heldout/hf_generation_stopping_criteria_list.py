"""transformers stopping criteria in a compiled decode step: MaxLength (Python length check + warning_once past max positions), EosToken (isin), the list OR.

Source: huggingface/transformers@v5.23.0:src/transformers/generation/stopping_criteria.py:60-86,540-616
Kept: MaxLengthCriteria, EosTokenCriteria and StoppingCriteriaList verbatim
(the `self.eos_token_id = ...to(device)` rebinding, torch.full of a Python
bool, the | accumulation), and the greedy step updating unfinished sequences
as GenerationMixin._sample does.
Simplified: the model is an embedding + head; warning_once is the
transformers lru_cache patch; max_position_embeddings 4.
"""
import functools
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


@functools.lru_cache(None)
def warning_once(self, *args, **kwargs):
    self.warning(*args, **kwargs)


logging.Logger.warning_once = warning_once


class MaxLengthCriteria:

    def __init__(self, max_length: int, max_position_embeddings: int | None=None):
        self.max_length = max_length
        self.max_position_embeddings = max_position_embeddings

    def __call__(self, input_ids: torch.LongTensor, scores: tuple[torch.Tensor] | None, **kwargs) -> torch.BoolTensor:
        cur_len = input_ids.shape[1]
        is_done = cur_len >= self.max_length
        if self.max_position_embeddings is not None and (not is_done) and (cur_len > self.max_position_embeddings):
            logger.warning_once(f"This is a friendly reminder - the current text generation call has exceeded the model's predefined maximum length ({self.max_position_embeddings}). Depending on the model, you may observe exceptions, performance degradation, or nothing at all.")
        return torch.full((input_ids.shape[0],), is_done, device=input_ids.device, dtype=torch.bool)


class EosTokenCriteria:

    def __init__(self, eos_token_id: int | list[int] | torch.Tensor):
        if not isinstance(eos_token_id, torch.Tensor):
            if isinstance(eos_token_id, int):
                eos_token_id = [eos_token_id]
            eos_token_id = torch.tensor(eos_token_id)
        self.eos_token_id = eos_token_id

    def __call__(self, input_ids: torch.LongTensor, scores: tuple[torch.Tensor] | None, new_token_length: int=1, **kwargs) -> torch.BoolTensor:
        self.eos_token_id = self.eos_token_id.to(input_ids.device)
        is_done = torch.isin(input_ids[:, -new_token_length:], self.eos_token_id).any(dim=-1)
        return is_done


class StoppingCriteriaList(list):

    def __call__(self, input_ids: torch.LongTensor, scores: tuple[torch.Tensor] | None, **kwargs) -> torch.BoolTensor:
        is_done = torch.full((input_ids.shape[0],), False, device=input_ids.device, dtype=torch.bool)
        for criteria in self:
            is_done = is_done | criteria(input_ids, scores, **kwargs)
        return is_done

    @property
    def max_length(self) -> int | None:
        for stopping_criterium in self:
            if isinstance(stopping_criterium, MaxLengthCriteria):
                return stopping_criterium.max_length
        return None


criteria = StoppingCriteriaList([MaxLengthCriteria(max_length=6, max_position_embeddings=4), EosTokenCriteria(eos_token_id=[2])])
lm = nn.Sequential(nn.Embedding(8, 8), nn.Linear(8, 8))


@torch.compile
def decode_step(input_ids, unfinished_sequences):
    next_tokens = lm(input_ids[:, -1]).argmax(-1)
    next_tokens = next_tokens * unfinished_sequences + 0 * (1 - unfinished_sequences)
    input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
    unfinished_sequences = unfinished_sequences & ~criteria(input_ids, None)
    return input_ids, unfinished_sequences


def make():
    torch.manual_seed(0)
    return decode_step._torchdynamo_orig_callable, [
        (torch.tensor([[1, 3], [4, 2]]), torch.ones(2, dtype=torch.long)),
        (torch.tensor([[1, 3, 5, 6], [4, 2, 0, 0]]), torch.tensor([1, 0])),
    ]
