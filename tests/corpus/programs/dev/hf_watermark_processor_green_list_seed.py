"""Watermark logits processor: per-row generator reseeded from `input_seq[-1].item()`, green lists drawn with randperm, self-hash rejection loop.

Source: huggingface/transformers@v5.23.0:src/transformers/generation/logits_process.py:63-99,2438-2577
Kept: WatermarkLogitsProcessor (constructor validation, `torch.Generator`
seeded from the hashing key, the fixed randperm table, `set_seed` for both
seeding schemes, `_get_greenlist_ids`, `_score_rejection_sampling`'s 40-step
loop with `in` membership and `torch.tensor(final_greenlist)`, and `__call__`
with its short-input logger warning and per-row loop) and
LogitsProcessorList.__call__.
Simplified: the sampling step is greedy argmax; vocab 48, table size 1009.
"""
import logging

import torch

logger = logging.getLogger(__name__)


class LogitsProcessor:
    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        raise NotImplementedError(
            f"{self.__class__} is an abstract class. Only classes inheriting this class can be called."
        )


class LogitsProcessorList(list):
    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs) -> torch.FloatTensor:
        for processor in self:
            scores = processor(input_ids, scores)
        return scores


class WatermarkLogitsProcessor(LogitsProcessor):
    def __init__(
        self,
        vocab_size,
        device,
        greenlist_ratio: float = 0.25,
        bias: float = 2.0,
        hashing_key: int = 15485863,
        seeding_scheme: str = "lefthash",
        context_width: int = 1,
    ):
        if seeding_scheme not in ["selfhash", "lefthash"]:
            raise ValueError(f"seeding_scheme has to be one of [`selfhash`, `lefthash`], but found {seeding_scheme}")
        if greenlist_ratio >= 1.0 or greenlist_ratio <= 0.0:
            raise ValueError(
                f"greenlist_ratio has be in range between 0.0 and 1.0, exclusively. but found {greenlist_ratio}"
            )

        self.vocab_size = vocab_size
        self.greenlist_size = int(self.vocab_size * greenlist_ratio)
        self.bias = bias
        self.seeding_scheme = seeding_scheme
        self.rng = torch.Generator(device=device)
        self.hash_key = hashing_key
        self.context_width = context_width

        self.rng.manual_seed(hashing_key)
        self.table_size = 1009
        self.fixed_table = torch.randperm(self.table_size, generator=self.rng, device=device)

    def set_seed(self, input_seq: torch.LongTensor):
        input_seq = input_seq[-self.context_width :]
        if self.seeding_scheme == "selfhash":
            a = self.fixed_table[input_seq % self.table_size] + 1
            b = self.fixed_table[input_seq[-1] % self.table_size] + 1
            seed = (self.hash_key * a * b).min().item()
        else:
            seed = self.hash_key * input_seq[-1].item()
        self.rng.manual_seed(seed % (2**64 - 1))

    def _get_greenlist_ids(self, input_seq: torch.LongTensor) -> torch.LongTensor:
        self.set_seed(input_seq)
        vocab_permutation = torch.randperm(self.vocab_size, device=input_seq.device, generator=self.rng)
        greenlist_ids = vocab_permutation[: self.greenlist_size]
        return greenlist_ids

    def _score_rejection_sampling(self, input_seq: torch.LongTensor, scores: torch.Tensor) -> torch.LongTensor:
        final_greenlist = []
        _, greedy_predictions = scores.sort(dim=-1, descending=True)

        # 40 is an arbitrary number chosen to save compute and not run for long (taken from orig repo)
        for i in range(40):
            greenlist_ids = self._get_greenlist_ids(torch.cat([input_seq, greedy_predictions[i, None]], dim=-1))
            if greedy_predictions[i] in greenlist_ids:
                final_greenlist.append(greedy_predictions[i])
        return torch.tensor(final_greenlist, device=input_seq.device)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        if input_ids.shape[-1] < self.context_width:
            logger.warning(
                f"`input_ids` should have at least `{self.context_width}` tokens but has {input_ids.shape[-1]}. "
                "The seeding will be skipped for this generation step!"
            )
            return scores

        scores_processed = scores.clone()
        for b_idx, input_seq in enumerate(input_ids):
            if self.seeding_scheme == "selfhash":
                greenlist_ids = self._score_rejection_sampling(input_seq, scores[b_idx])
            else:
                greenlist_ids = self._get_greenlist_ids(input_seq)
            scores_processed[b_idx, greenlist_ids] = scores_processed[b_idx, greenlist_ids] + self.bias

        return scores_processed


@torch.compile
def greedy_step(input_ids, next_token_logits, logits_processor):
    next_token_scores = logits_processor(input_ids, next_token_logits)
    next_tokens = torch.argmax(next_token_scores, dim=-1)
    return torch.cat([input_ids, next_tokens[:, None]], dim=-1)


def make():
    torch.manual_seed(0)
    vocab = 48
    ids = torch.randint(0, vocab, (2, 5))
    logits = torch.randn(2, vocab)
    lefthash = LogitsProcessorList([WatermarkLogitsProcessor(vocab, "cpu")])
    selfhash = LogitsProcessorList([WatermarkLogitsProcessor(vocab, "cpu", seeding_scheme="selfhash", context_width=2)])
    short = LogitsProcessorList([WatermarkLogitsProcessor(vocab, "cpu", context_width=8)])
    return greedy_step._torchdynamo_orig_callable, [
        (ids, logits, lefthash),
        (ids[:1], logits[:1], selfhash),
        (ids, logits, short),
    ]
