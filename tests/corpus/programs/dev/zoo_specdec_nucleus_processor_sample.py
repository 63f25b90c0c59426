"""Speculative-Decoding logits processors: `LogitsProcessor.__call__` runs the subclass's `_process` then softmax over temperature; `TopKProcessor` masks with `logits < torch.topk(...)[0][..., -1, None]` and masked assignment; `NucleusProcessor` sorts, shifts the removal mask with `[..., 1:] = [..., :-1].clone()`, writes `[..., 0] = 0`, masks the sorted logits and un-sorts with `torch.gather(..., sorted_indices.argsort(-1))`; `sample` draws with `torch.multinomial` or `torch.argmax`.

Source: romsto/Speculative-Decoding@61b191b5bf4d3496c1cfe469d0e0d458ad2b6edf:utils/logits_processor.py:1-80
Kept: the processor classes verbatim; the compile entry is the two lines every decoding loop in
the repository runs per step (`probs = logits_processor(logits)`, `x = logits_processor.sample(probs)`).
Simplified: batch of 2 rows over a vocabulary of 12.
"""
import abc

import torch
from torch import Tensor
from torch.nn import functional as F


class LogitsProcessor(abc.ABC):
    """Logits processors for sampling."""

    def __init__(self, temperature: float):
        self.temperature = temperature

    def __call__(self, logits: Tensor) -> Tensor:
        proc = self._process(logits)
        return F.softmax(proc / self.temperature, dim=-1)

    @abc.abstractmethod
    def _process(self, logits: Tensor) -> Tensor:
        pass

    @abc.abstractmethod
    def sample(self, probs: Tensor) -> Tensor:
        pass


class GreedyProcessor(LogitsProcessor):
    """Greedy: Most probable token."""

    def __init__(self, temperature: float):
        super().__init__(temperature)

    def _process(self, logits: Tensor) -> Tensor:
        return logits

    def sample(self, probs: Tensor) -> Tensor:
        return torch.argmax(probs, dim=-1).unsqueeze(-1)


class MultinomialProcessor(LogitsProcessor):
    """Multinomial: Random sampling."""

    def __init__(self, temperature: float):
        super().__init__(temperature)

    def _process(self, logits: Tensor) -> Tensor:
        return logits

    def sample(self, probs: Tensor) -> Tensor:
        return torch.multinomial(probs, num_samples=1)


class TopKProcessor(MultinomialProcessor):
    """Top-k: Top-k sampling."""

    def __init__(self, temperature: float, top_k: int):
        super().__init__(temperature)
        self.top_k = top_k

    def _process(self, logits: Tensor) -> Tensor:
        top_k = min(self.top_k, logits.size(-1))
        indices_to_remove = logits < torch.topk(logits, top_k, dim=-1)[0][..., -1, None]
        logits[indices_to_remove] = -1e20
        return logits


class NucleusProcessor(MultinomialProcessor):
    """Nucleus: Top-p sampling."""

    def __init__(self, temperature: float, top_p: float):
        super().__init__(temperature)
        self.top_p = top_p

    def _process(self, logits: Tensor) -> Tensor:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
        sorted_indices_to_remove = cumulative_probs > self.top_p
        sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
        sorted_indices_to_remove[..., 0] = 0
        sorted_logits[sorted_indices_to_remove] = -1e20
        logits = torch.gather(sorted_logits, -1, sorted_indices.argsort(-1))
        return logits


@torch.compile(dynamic=False)
def sample_next(logits_processor, logits):
    probs = logits_processor(logits)  # [1, vocab_size]
    x = logits_processor.sample(probs)  # [1, 1]
    return x


def make():
    torch.manual_seed(0)
    logits = torch.randn(2, 12) * 2
    return sample_next._torchdynamo_orig_callable, [
        (NucleusProcessor(temperature=0.8, top_p=0.9), logits.clone()),
        (TopKProcessor(temperature=1.0, top_k=4), logits.clone()),
        (GreedyProcessor(temperature=1), logits.clone()),
    ]
