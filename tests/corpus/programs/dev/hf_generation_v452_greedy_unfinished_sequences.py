"""transformers 4.52 greedy _sample loop: `while self._has_unfinished_sequences(this_peer_finished, ...)` where this_peer_finished is `unfinished_sequences.max() == 0`, a 0-d tensor tested by `elif this_peer_finished:`.

Source: huggingface/transformers@v4.52.4:src/transformers/generation/utils.py:2734-2750,3464-3649; src/transformers/generation/stopping_criteria.py:59-90,452-470,497-512
Kept: _has_unfinished_sequences verbatim, the _sample loop body (prepare
inputs, forward, next-token logits copy, logits processor, argmax, the
has_eos_stopping_criteria pad mixing, cat, stopping criteria update,
`this_peer_finished = unfinished_sequences.max() == 0`), MaxLengthCriteria,
EosTokenCriteria (torch.isin for isin_mps_friendly) and StoppingCriteriaList.
Simplified: no cache, scores/attentions bookkeeping, streamer or synced-gpu
all-reduce (synced_gpus stays False); the model is an Embedding+Linear LM; the
logits processor list is empty; generate() is compiled directly.
"""
from typing import List, Optional, Union

import torch
from torch import nn


class MaxLengthCriteria:
    def __init__(self, max_length: int, max_position_embeddings: Optional[int] = None):
        self.max_length = max_length
        self.max_position_embeddings = max_position_embeddings

    def __call__(self, input_ids, scores, **kwargs):
        cur_len = input_ids.shape[1]
        is_done = cur_len >= self.max_length
        return torch.full((input_ids.shape[0],), is_done, device=input_ids.device, dtype=torch.bool)


class EosTokenCriteria:
    def __init__(self, eos_token_id: Union[int, List[int], torch.Tensor]):
        if not isinstance(eos_token_id, torch.Tensor):
            if isinstance(eos_token_id, int):
                eos_token_id = [eos_token_id]
            eos_token_id = torch.tensor(eos_token_id)
        self.eos_token_id = eos_token_id

    def __call__(self, input_ids, scores, **kwargs):
        self.eos_token_id = self.eos_token_id.to(input_ids.device)
        is_done = torch.isin(input_ids[:, -1], self.eos_token_id)
        return is_done


class StoppingCriteriaList(list):
    def __call__(self, input_ids, scores, **kwargs):
        is_done = torch.full((input_ids.shape[0],), False, device=input_ids.device, dtype=torch.bool)
        for criteria in self:
            is_done = is_done | criteria(input_ids, scores, **kwargs)
        return is_done


class LogitsProcessorList(list):
    def __call__(self, input_ids, scores, **kwargs):
        for processor in self:
            scores = processor(input_ids, scores)
        return scores


class TinyLM(nn.Module):
    def __init__(self, vocab_size=6, hidden=8, eos_token_id=0, pad_token_id=0, max_length=7):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, hidden)
        self.lm_head = nn.Linear(hidden, vocab_size)
        self.eos_token_id = eos_token_id
        self.pad_token_id = pad_token_id
        self.max_length = max_length

    def forward(self, input_ids):
        return self.lm_head(torch.tanh(self.embed(input_ids).cumsum(1)))

    def _has_unfinished_sequences(self, this_peer_finished: bool, synced_gpus: bool, device: torch.device) -> bool:
        """
        Returns whether there are still unfinished sequences in the device. The existence of unfinished sequences is
        fed through `this_peer_finished`. ZeRO stage 3-friendly.
        """
        if synced_gpus:
            # Under synced_gpus the `forward` call must continue until all gpus complete their sequence.
            # The following logic allows an early break if all peers finished generating their sequence
            this_peer_finished_flag = torch.tensor(0.0 if this_peer_finished else 1.0).to(device)
            # did all peers finish? the reduced sum will be 0.0 then
            if this_peer_finished_flag.item() == 0.0:
                return False
        elif this_peer_finished:
            return False
        return True

    def prepare_inputs_for_generation(self, input_ids, **model_kwargs):
        return {"input_ids": input_ids}

    def generate(self, input_ids, synced_gpus=False):
        logits_processor = LogitsProcessorList()
        stopping_criteria = StoppingCriteriaList(
            [MaxLengthCriteria(max_length=self.max_length), EosTokenCriteria(eos_token_id=self.eos_token_id)]
        )
        pad_token_id = torch.tensor(self.pad_token_id)
        has_eos_stopping_criteria = any(hasattr(criteria, "eos_token_id") for criteria in stopping_criteria)

        batch_size, cur_len = input_ids.shape[:2]
        this_peer_finished = False
        unfinished_sequences = torch.ones(batch_size, dtype=torch.long, device=input_ids.device)

        while self._has_unfinished_sequences(this_peer_finished, synced_gpus, device=input_ids.device):
            model_inputs = self.prepare_inputs_for_generation(input_ids)
            outputs = self(**model_inputs)

            next_token_logits = outputs[:, -1, :].to(copy=True, dtype=torch.float32, device=input_ids.device)
            next_token_scores = logits_processor(input_ids, next_token_logits)
            next_tokens = torch.argmax(next_token_scores, dim=-1)

            # finished sentences should have their next token be a padding token
            if has_eos_stopping_criteria:
                next_tokens = next_tokens * unfinished_sequences + pad_token_id * (1 - unfinished_sequences)

            # update generated ids, model inputs, and length for next step
            input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)

            unfinished_sequences = unfinished_sequences & ~stopping_criteria(input_ids, None)
            this_peer_finished = unfinished_sequences.max() == 0
            cur_len += 1

            del outputs

        return input_ids


lm = TinyLM()
lm.generate = torch.compile(lm.generate)


def make():
    torch.manual_seed(0)
    m = TinyLM()
    with torch.no_grad():
        m.lm_head.bias.zero_()
        m.lm_head.bias[0] = -0.5
    prompts_a = torch.tensor([[1, 2], [3, 4]])
    prompts_b = torch.tensor([[5, 5, 5]])
    return m.generate, [(prompts_a,), (prompts_b,)]
