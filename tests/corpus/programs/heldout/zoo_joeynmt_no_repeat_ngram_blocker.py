"""JoeyNMT n-gram repeat blocker: `block_repeat_ngrams` copies hypotheses (and optional source tokens) to Python lists with `.cpu().tolist()`, collects banned next tokens in per-hypothesis sets, subtracts `exclude_tokens`, and writes `-inf` through `scores[i, list(banned_tokens)]`.

Source: joeynmt/joeynmt@cdc4d03d430a1b0f29793a0d95743c5e72ae2f6c:joeynmt/search.py:910-966
Kept: block_repeat_ngrams verbatim (the src_tokens/exclude_tokens kwargs
read with kwargs.get).
Simplified: called positionally (tokens, scores, no_repeat_ngram_size,
step), as transformer_greedy does before its keyword arguments; 2
hypotheses over a 10-token vocabulary.
"""
from typing import List

import torch
from torch import Tensor


def block_repeat_ngrams(
    tokens: Tensor, scores: Tensor, no_repeat_ngram_size: int, step: int, **kwargs
) -> Tensor:
    """
    For each hypothesis, check a list of previous ngrams and set associated log probs
    to -inf. Taken from fairseq's NGramRepeatBlock.

    :param tokens: target tokens generated so far
    :param scores: log probabilities of the next token to generate in this time step
    :param no_repeat_ngram_size: ngram size to prohibit
    :param step: generation step (= length of hypotheses so far)
    """
    hyp_size = tokens.size(0)
    banned_batch_tokens = [set([]) for _ in range(hyp_size)]

    trg_tokens = tokens.cpu().tolist()
    check_end_pos = step + 2 - no_repeat_ngram_size
    offset = no_repeat_ngram_size - 1

    src_tokens = kwargs.get("src_tokens", None)
    if src_tokens is not None:
        src_length = src_tokens.size(-1)
        assert src_tokens.size(0) == hyp_size, (src_tokens.size(), hyp_size)
        src_tokens = src_tokens.cpu().tolist()
    exclude_tokens = kwargs.get("exclude_tokens", [])

    # get repeated ngrams
    for hyp_idx in range(hyp_size):
        if len(trg_tokens[hyp_idx]) > no_repeat_ngram_size:
            # (n-1) token prefix at the time step
            #                       0  1  2  3  4  <- time step
            # if tokens[hyp_idx] = [2, 5, 5, 6, 5]    at step 4 with ngram_size = 3,
            #                                ^  ^  ^
            # then ngram_to_check = [6, 5], and set the token in the next position to
            # -inf, if there are ngrams start with [6, 5].
            ngram_to_check = trg_tokens[hyp_idx][-offset:]

            for i in range(1, check_end_pos):  # ignore BOS
                if ngram_to_check == trg_tokens[hyp_idx][i:i + offset]:
                    banned_batch_tokens[hyp_idx].add(trg_tokens[hyp_idx][i + offset])

            # src_tokens
            if src_tokens is not None:
                check_end_pos_src = src_length + 1 - no_repeat_ngram_size
                for i in range(check_end_pos_src):  # no BOS in src
                    if ngram_to_check == src_tokens[hyp_idx][i:i + offset]:
                        banned_batch_tokens[hyp_idx].add(
                            src_tokens[hyp_idx][i + offset]
                        )

    # set the score of the banned tokens to -inf
    for i, banned_tokens in enumerate(banned_batch_tokens):
        banned_tokens = set(banned_tokens) - set(exclude_tokens)
        scores[i, list(banned_tokens)] = float("-inf")
    return scores


blocker = torch.compile(block_repeat_ngrams)


def make():
    torch.manual_seed(0)
    tokens = torch.tensor([[2, 5, 5, 6, 5, 6], [2, 4, 7, 8, 9, 4]])
    scores = torch.log_softmax(torch.randn(2, 10), dim=-1)
    short = tokens[:, :3]
    return block_repeat_ngrams, [
        (tokens, scores.clone(), 3, 5),
        (tokens, scores.clone(), 2, 5),
        (short, scores.clone(), 3, 2),
    ]
