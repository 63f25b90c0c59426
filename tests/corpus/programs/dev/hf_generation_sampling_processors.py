"""A compiled sampling step over transformers' warpers: repetition penalty, temperature, top-k, top-p, min-p (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/generation/logits_process.py:155-161,301-303,374-437,556-568,619-624,790-806
Kept: MinLengthLogitsProcessor (isin over vocab, shape-gated torch.where),
RepetitionPenalty's 2-D path (pad, gather, where, scatter, slice),
TemperatureLogitsWarper, TopK (topk threshold, masked_fill), TopP (sort,
cumsum, scatter back), MinP (amax, topk keep), and a LogitsProcessorList-style loop.
Simplified: vocab 10; the model is an embedding + linear; multinomial sampling.
"""
import math

import torch
from torch import nn


class MinLengthLogitsProcessor:
    def __init__(self, min_length, eos_token_id):
        self.min_length = min_length
        self.eos_token_id = torch.tensor(eos_token_id)

    def __call__(self, input_ids, scores):
        vocab_tensor = torch.arange(scores.shape[-1], device=scores.device)
        eos_token_mask = torch.isin(vocab_tensor, self.eos_token_id)
        scores_processed = scores.clone()
        if input_ids.shape[-1] < self.min_length:
            scores_processed = torch.where(eos_token_mask, -math.inf, scores)
        return scores_processed


class RepetitionPenaltyLogitsProcessor:
    def __init__(self, penalty):
        self.penalty = penalty

    def __call__(self, input_ids, scores):
        vocab_size = scores.shape[-1]
        if input_ids.dim() == 1:
            input_ids = input_ids.unsqueeze(1)
        input_ids = input_ids.clamp(max=vocab_size)
        scores = torch.nn.functional.pad(scores, (0, 1))
        score = torch.gather(scores, 1, input_ids)
        score = torch.where(score < 0, score * self.penalty, score / self.penalty)
        scores_processed = scores.scatter(1, input_ids, score)
        return scores_processed[..., :vocab_size]


class TemperatureLogitsWarper:
    def __init__(self, temperature):
        self.temperature = temperature

    def __call__(self, input_ids, scores):
        return scores / self.temperature


class TopKLogitsWarper:
    def __init__(self, top_k, filter_value=-float("Inf"), min_tokens_to_keep=1):
        self.top_k = max(top_k, min_tokens_to_keep)
        self.filter_value = filter_value

    def __call__(self, input_ids, scores):
        top_k = min(self.top_k, scores.size(-1))
        indices_to_remove = scores < torch.topk(scores, top_k)[0][..., -1, None]
        return scores.masked_fill(indices_to_remove, self.filter_value)


class TopPLogitsWarper:
    def __init__(self, top_p, filter_value=-float("Inf"), min_tokens_to_keep=1):
        self.top_p = float(top_p)
        self.filter_value = filter_value
        self.min_tokens_to_keep = min_tokens_to_keep

    def __call__(self, input_ids, scores):
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        sorted_indices_to_remove = cumulative_probs <= (1 - self.top_p)
        sorted_indices_to_remove[..., -self.min_tokens_to_keep :] = 0
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        return scores.masked_fill(indices_to_remove, self.filter_value)


class MinPLogitsWarper:
    def __init__(self, min_p, filter_value=-float("Inf"), min_tokens_to_keep=1):
        self.min_p = min_p
        self.filter_value = filter_value
        self.min_tokens_to_keep = min_tokens_to_keep

    def __call__(self, input_ids, scores):
        probs = torch.softmax(scores, dim=-1)
        top_probs = probs.amax(dim=-1, keepdim=True)
        scaled_min_p = self.min_p * top_probs
        tokens_to_remove = probs < scaled_min_p
        k = min(self.min_tokens_to_keep, probs.shape[-1])
        sorted_indices = torch.topk(probs, k, dim=-1).indices
        tokens_to_remove.scatter_(-1, sorted_indices, False)
        return scores.masked_fill(tokens_to_remove, self.filter_value)


class LogitsProcessorList(list):
    def __call__(self, input_ids, scores):
        for processor in self:
            scores = processor(input_ids, scores)
        return scores


processors = LogitsProcessorList([
    MinLengthLogitsProcessor(4, eos_token_id=[2]), RepetitionPenaltyLogitsProcessor(1.3), TemperatureLogitsWarper(0.7),
    TopKLogitsWarper(5), TopPLogitsWarper(0.9), MinPLogitsWarper(0.05),
])
lm = nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 10))


@torch.compile(mode="reduce-overhead")
def sample_next_token(input_ids):
    next_token_logits = lm(input_ids[:, -1])
    next_token_scores = processors(input_ids, next_token_logits)
    probs = nn.functional.softmax(next_token_scores, dim=-1)
    return torch.multinomial(probs, num_samples=1).squeeze(1)


def make():
    torch.manual_seed(0)
    return sample_next_token._torchdynamo_orig_callable, [(torch.tensor([[1, 4, 4], [3, 2, 7]]),), (torch.tensor([[1, 4, 4, 5, 6], [3, 2, 7, 7, 1]]),)]
