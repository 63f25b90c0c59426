"""Length-dependent logits processors: exponential eos boost past a start length, begin-token suppression at one index, log-softmax normalisation (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/generation/logits_process.py:1718-1820,1820-1856,1857-1908
Kept: ExponentialDecayLengthPenalty (constructor eos normalisation and its
`(eos_token_id < 0).any()` ValueError, `__call__` with the shape-based
`cur_len > self.regulation_start` branch, `pow(...)` penalty on the absolute
eos logits, `masked_fill(~isfinite)`, indexed assignment),
SuppressTokensAtBeginLogitsProcessor (isin mask applied when
`input_ids.shape[-1] == self.begin_index`), LogitNormalization.
Simplified: the processors are applied in a greedy step compiled through a
`functools.partial(torch.compile, ...)` factory; vocab 12.
"""
import functools

import torch


class ExponentialDecayLengthPenalty:
    def __init__(self, exponential_decay_length_penalty, eos_token_id, input_ids_seq_length):
        self.regulation_start = exponential_decay_length_penalty[0] + input_ids_seq_length
        self.regulation_factor = exponential_decay_length_penalty[1]
        if not isinstance(eos_token_id, torch.Tensor):
            if isinstance(eos_token_id, int):
                eos_token_id = [eos_token_id]
            eos_token_id = torch.tensor(eos_token_id)
        self.eos_token_id = eos_token_id
        if torch.is_floating_point(eos_token_id) or (eos_token_id < 0).any():
            raise ValueError(f"`eos_token_id` has to be a list of positive integers, but is {eos_token_id}")

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        cur_len = input_ids.shape[-1]
        self.eos_token_id = self.eos_token_id.to(scores.device)
        penalties = torch.zeros_like(scores)
        scores_processed = scores
        if cur_len > self.regulation_start:
            penalty_idx = cur_len - self.regulation_start
            # To support negative logits we compute the penalty of the absolute value and add to the original logit
            penalty = torch.abs(scores[:, self.eos_token_id]) * (pow(self.regulation_factor, penalty_idx) - 1)
            penalty = penalty.masked_fill(~torch.isfinite(scores[:, self.eos_token_id]), 0.0)
            penalties[:, self.eos_token_id] = penalty
            scores_processed = scores + penalties
        return scores_processed


class LogitNormalization:
    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        scores_processed = scores.log_softmax(dim=-1)
        return scores_processed


class SuppressTokensAtBeginLogitsProcessor:
    def __init__(self, begin_suppress_tokens, begin_index, device: str = "cpu"):
        self.begin_suppress_tokens = torch.tensor(list(begin_suppress_tokens), device=device)
        self.begin_index = begin_index

    def set_begin_index(self, begin_index):
        self.begin_index = begin_index

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        vocab_tensor = torch.arange(scores.shape[-1], device=scores.device)
        suppress_token_mask = torch.isin(vocab_tensor, self.begin_suppress_tokens.to(scores.device))
        scores_processed = scores
        if input_ids.shape[-1] == self.begin_index:
            scores_processed = torch.where(suppress_token_mask, -float("inf"), scores)

        return scores_processed


processors = [
    SuppressTokensAtBeginLogitsProcessor([1, 2], begin_index=3),
    ExponentialDecayLengthPenalty((2, 1.5), eos_token_id=[2, 11], input_ids_seq_length=3),
    LogitNormalization(),
]

compile_step = functools.partial(torch.compile, backend="inductor", dynamic=False)


def greedy_step(input_ids, next_token_logits):
    scores = next_token_logits
    for processor in processors:
        scores = processor(input_ids, scores)
    next_tokens = scores.argmax(dim=-1)
    return torch.cat([input_ids, next_tokens[:, None]], dim=-1), scores


step = compile_step(greedy_step)


def make():
    torch.manual_seed(0)
    logits = torch.randn(2, 12)
    logits[1, 11] = -float("inf")
    return greedy_step, [
        (torch.randint(0, 12, (2, 3)), logits),  # at the begin index, before the penalty starts
        (torch.randint(0, 12, (2, 7)), logits),  # penalty active, begin suppression not
    ]
