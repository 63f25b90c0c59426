"""Whisper timestamp logits processor at v4.52.4: per-hypothesis `.tolist()`, bool-mask reads, and `if timestamp_logprob > max_text_token_logprob` on tensors.

Source: huggingface/transformers@v4.52.4:src/transformers/generation/logits_process.py:1936-2018
Kept: WhisperTimeStampLogitsProcessor verbatim (the config plumbing in
__init__, the first loop with tolist / timestamp pairing rules / masked
timestamps and `.numel() > 0`, the begin-index rule, the logprob loop
comparing a logsumexp to a max), used in a compiled decoding step.
Simplified: a tiny generation config; vocab 12 with timestamps from 8.
"""
from typing import Optional

import torch
from torch import nn


class WhisperTimeStampLogitsProcessor:

    def __init__(self, generate_config, begin_index: Optional[int]=None, _detect_timestamp_from_logprob: Optional[bool]=None):
        self.no_timestamps_token_id = generate_config.no_timestamps_token_id
        self.timestamp_begin = generate_config.no_timestamps_token_id + 1
        self.eos_token_id = generate_config.eos_token_id or generate_config.bos_token_id
        self._detect_timestamp_from_logprob = _detect_timestamp_from_logprob if _detect_timestamp_from_logprob is not None else getattr(generate_config, '_detect_timestamp_from_logprob', True)
        num_forced_ids = len(generate_config.forced_decoder_ids) if generate_config.forced_decoder_ids is not None else 0
        self.begin_index = begin_index or num_forced_ids + 1
        self.max_initial_timestamp_index = getattr(generate_config, 'max_initial_timestamp_index', None)

    def set_begin_index(self, begin_index):
        self.begin_index = begin_index

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        scores_processed = scores.clone()
        scores_processed[:, self.no_timestamps_token_id] = -float('inf')
        for k in range(input_ids.shape[0]):
            sampled_tokens = input_ids[k, self.begin_index:]
            seq = list(sampled_tokens.tolist())
            last_was_timestamp = len(seq) >= 1 and seq[-1] >= self.timestamp_begin
            penultimate_was_timestamp = len(seq) < 2 or seq[-2] >= self.timestamp_begin
            if last_was_timestamp:
                if penultimate_was_timestamp:
                    scores_processed[k, self.timestamp_begin:] = -float('inf')
                else:
                    scores_processed[k, :self.eos_token_id] = -float('inf')
            timestamps = sampled_tokens[sampled_tokens.ge(self.timestamp_begin)]
            if timestamps.numel() > 0:
                if last_was_timestamp and (not penultimate_was_timestamp):
                    timestamp_last = timestamps[-1]
                else:
                    timestamp_last = timestamps[-1] + 1
                scores_processed[k, self.timestamp_begin:timestamp_last] = -float('inf')
        if input_ids.shape[1] == self.begin_index:
            scores_processed[:, :self.timestamp_begin] = -float('inf')
            if self.max_initial_timestamp_index is not None:
                last_allowed = self.timestamp_begin + self.max_initial_timestamp_index
                scores_processed[:, last_allowed + 1:] = -float('inf')
        logprobs = torch.nn.functional.log_softmax(scores_processed.float(), dim=-1)
        for k in range(input_ids.shape[0]):
            timestamp_logprob = logprobs[k, self.timestamp_begin:].logsumexp(dim=-1)
            max_text_token_logprob = logprobs[k, :self.timestamp_begin].max()
            if timestamp_logprob > max_text_token_logprob and self._detect_timestamp_from_logprob:
                scores_processed[k, :self.timestamp_begin] = -float('inf')
        return scores_processed



class GenerationConfig:
    no_timestamps_token_id = 7
    eos_token_id = 3
    bos_token_id = 1
    forced_decoder_ids = None
    max_initial_timestamp_index = 2


processor = WhisperTimeStampLogitsProcessor(GenerationConfig(), begin_index=2)
lm_head = nn.Linear(4, 12)


@torch.compile
def next_token_scores(input_ids, hidden):
    scores = lm_head(hidden)
    return processor(input_ids, scores)


def make():
    torch.manual_seed(0)
    return next_token_scores._torchdynamo_orig_callable, [
        (torch.tensor([[1, 2, 9, 10], [1, 2, 4, 9]]), torch.randn(2, 4)),
        (torch.tensor([[1, 2], [1, 2]]), torch.randn(2, 4)),
    ]
