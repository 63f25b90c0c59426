"""NoRepeatNGramLogitsProcessor at v5.23: vectorised with unfold, a window match, scatter_ into a mask (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/generation/logits_process.py:1102-1170
Kept: the constructor's ngram_size check, the `cur_len < ngram_size` early
return, prefix/unfold windows, the all(-1) match, the vocab+1 banned mask with
scatter_ through torch.where, and masked_fill.
Simplified: used inside a compiled greedy decode step with a linear "model".
"""
import torch
from torch import nn


class NoRepeatNGramLogitsProcessor:
    def __init__(self, ngram_size: int):
        if not isinstance(ngram_size, int) or ngram_size <= 0:
            raise ValueError(f"`ngram_size` has to be a strictly positive integer, but is {ngram_size}")
        self.ngram_size = ngram_size

    def __call__(self, input_ids, scores):
        cur_len = input_ids.shape[-1]
        if cur_len < self.ngram_size:
            return scores
        prefix = input_ids[:, cur_len + 1 - self.ngram_size :]
        windows = input_ids.unfold(dimension=1, size=self.ngram_size, step=1)
        matches = (windows[..., :-1] == prefix.unsqueeze(1)).all(dim=-1)
        vocab_size = scores.shape[-1]
        banned_mask = scores.new_zeros((scores.shape[0], vocab_size + 1), dtype=torch.bool)
        banned_mask.scatter_(1, torch.where(matches, windows[..., -1].clamp(max=vocab_size), vocab_size), True)
        return scores.masked_fill(banned_mask[:, :vocab_size], -float("inf"))


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


step = torch.compile(GreedyStep(), dynamic=True)


def make():
    torch.manual_seed(0)
    return GreedyStep(), [(torch.tensor([[1, 2, 1], [3, 3, 4]]),), (torch.tensor([[5]]),)]
