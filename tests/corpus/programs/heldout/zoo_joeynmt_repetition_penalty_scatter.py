"""JoeyNMT repetition penalty: `penalize_repetition` gathers the scores of already generated tokens, scales them with `torch.where(score < 0, score * penalty, score / penalty)`, scatters them back in place, then loops over `exclude_tokens` restoring columns from `scores_before` (an alias of `scores`).

Source: joeynmt/joeynmt@cdc4d03d430a1b0f29793a0d95743c5e72ae2f6c:joeynmt/search.py:967-997
Kept: penalize_repetition verbatim.
Simplified: 2 hypotheses of 5 tokens over a 10-token vocabulary; penalty
1.2; exclude_tokens as transformer_greedy passes it (model.specials +
model.lang_tags: the ids 0-3) or None.
"""
from typing import List

import torch
from torch import Tensor


def penalize_repetition(
    tokens: Tensor,
    scores: Tensor,
    penalty: float,
    exclude_tokens: List[int] = None
) -> Tensor:
    """
    Reduce probability of the given tokens.
    Taken from Huggingface's RepetitionPenaltyLogitsProcessor.

    :param tokens: token ids to penalize
    :param scores: log probabilities of the next token to generate
    :param penalty: penalty value, bigger value implies less probability
    :param exclude_tokens: list of token ids to exclude from penalizing
    """
    scores_before = scores if exclude_tokens else None
    score = torch.gather(scores, 1, tokens)

    # if score < 0 then repetition penalty has to be multiplied
    # to reduce the previous token probability
    score = torch.where(score < 0, score * penalty, score / penalty)

    scores.scatter_(1, tokens, score)

    # exclude special tokens
    if exclude_tokens:
        for token in exclude_tokens:
            # pylint: disable=unsubscriptable-object
            scores[:, token] = scores_before[:, token]
    return scores


penalize = torch.compile(penalize_repetition)


def make():
    torch.manual_seed(0)
    tokens = torch.tensor([[2, 5, 5, 6, 3], [2, 4, 7, 8, 9]])
    scores = torch.log_softmax(torch.randn(2, 10), dim=-1)
    return penalize_repetition, [
        (tokens, scores.clone(), 1.2, [0, 1, 2, 3]),
        (tokens, scores.clone(), 1.2, None),
        (tokens, scores.clone() + 2.0, 1.5),
    ]
