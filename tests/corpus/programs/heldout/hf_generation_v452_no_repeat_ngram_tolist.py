"""NoRepeatNGramLogitsProcessor at v4.52.4: `.tolist()` of every hypothesis to build Python n-gram dicts.

Source: huggingface/transformers@v4.52.4:src/transformers/generation/logits_process.py:861-925,976-984
Kept: _get_ngrams (tolist, zip of shifted lists, dict of prefix tuples),
_get_generated_ngrams (tolist of the current prefix), _calc_banned_ngram_tokens
with its cur_len early exit, and __call__ assigning -inf per hypothesis.
Simplified: used inside a compiled greedy decode step with a linear "model".
"""
import torch
from torch import nn


def _get_ngrams(ngram_size, prev_input_ids, num_hypos):
    generated_ngrams = [{} for _ in range(num_hypos)]
    for idx in range(num_hypos):
        gen_tokens = prev_input_ids[idx].tolist()
        generated_ngram = generated_ngrams[idx]
        for ngram in zip(*[gen_tokens[i:] for i in range(ngram_size)]):
            prev_ngram_tuple = tuple(ngram[:-1])
            generated_ngram[prev_ngram_tuple] = generated_ngram.get(prev_ngram_tuple, []) + [ngram[-1]]
    return generated_ngrams


def _get_generated_ngrams(banned_ngrams, prev_input_ids, ngram_size, cur_len):
    start_idx = cur_len + 1 - ngram_size
    ngram_idx = tuple(prev_input_ids[start_idx:cur_len].tolist())
    return banned_ngrams.get(ngram_idx, [])


def _calc_banned_ngram_tokens(ngram_size, prev_input_ids, num_hypos, cur_len):
    if cur_len + 1 < ngram_size:
        return [[] for _ in range(num_hypos)]
    generated_ngrams = _get_ngrams(ngram_size, prev_input_ids, num_hypos)
    banned_tokens = [
        _get_generated_ngrams(generated_ngrams[hypo_idx], prev_input_ids[hypo_idx], ngram_size, cur_len)
        for hypo_idx in range(num_hypos)
    ]
    return banned_tokens


class NoRepeatNGramLogitsProcessor:
    def __init__(self, ngram_size: int):
        if not isinstance(ngram_size, int) or ngram_size <= 0:
            raise ValueError(f"`ngram_size` has to be a strictly positive integer, but is {ngram_size}")
        self.ngram_size = ngram_size

    def __call__(self, input_ids, scores):
        num_batch_hypotheses = scores.shape[0]
        cur_len = input_ids.shape[-1]
        scores_processed = scores.clone()
        banned_batch_tokens = _calc_banned_ngram_tokens(self.ngram_size, input_ids, num_batch_hypotheses, cur_len)
        for i, banned_tokens in enumerate(banned_batch_tokens):
            scores_processed[i, banned_tokens] = -float("inf")
        return scores_processed


class GreedyStep(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(8, 8)
        self.lm_head = nn.Linear(8, 8)
        self.processor = NoRepeatNGramLogitsProcessor(2)

    def forward(self, input_ids):
        scores = self.lm_head(self.embed(input_ids[:, -1]))
        scores = self.processor(input_ids, scores)
        return torch.argmax(scores, dim=-1)


step = torch.compile(GreedyStep())


def make():
    torch.manual_seed(0)
    return GreedyStep(), [(torch.tensor([[1, 2, 1], [3, 3, 4]]),)]
