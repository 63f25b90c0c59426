"""gpt-fast decode_one_token: top-k pivot via `v.select(-1, -1)` and `torch.where`, exponential-race sampling, kwargs plumbing (no break).

Source: pytorch-labs/gpt-fast@0055c42dfeb98f5c3e1a1ab8c2e4b3025f7d3f3a:generate.py:40-66
Also: the `decode_one_token = torch.compile(decode_one_token, mode="reduce-overhead", fullgraph=True)`
line of main() (generate.py:297).
Kept: multinomial_sample_one_no_sync, logits_to_probs, sample and decode_one_token verbatim,
**sampling_kwargs passed through.
Simplified: the Transformer is a tiny embedding + linear head taking `(x, input_pos)`
without a KV cache.
"""
from typing import Optional, Tuple

import torch
from torch import nn


class Transformer(nn.Module):
    def __init__(self, vocab_size: int = 16, dim: int = 8, block_size: int = 32) -> None:
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab_size, dim)
        self.pos_embeddings = nn.Embedding(block_size, dim)
        self.output = nn.Linear(dim, vocab_size, bias=False)

    def forward(self, idx: torch.Tensor, input_pos: torch.Tensor) -> torch.Tensor:
        x = self.tok_embeddings(idx) + self.pos_embeddings(input_pos)
        return self.output(torch.tanh(x))


def multinomial_sample_one_no_sync(probs_sort): # Does multinomial sampling without a cuda synchronization
    q = torch.empty_like(probs_sort).exponential_(1)
    return torch.argmax(probs_sort / q, dim=-1, keepdim=True).to(dtype=torch.int)

def logits_to_probs(logits, temperature: float = 1.0, top_k: Optional[int] = None):
    logits = logits / max(temperature, 1e-5)

    if top_k is not None:
        v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
        pivot = v.select(-1, -1).unsqueeze(-1)
        logits = torch.where(logits < pivot, -float("Inf"), logits)
    probs = torch.nn.functional.softmax(logits, dim=-1)
    return probs

def sample(logits, temperature: float = 1.0, top_k: Optional[int] = None):
    probs = logits_to_probs(logits[0, -1], temperature, top_k)
    idx_next = multinomial_sample_one_no_sync(probs)
    return idx_next, probs

def decode_one_token(model: Transformer, x: torch.Tensor, input_pos: torch.Tensor, **sampling_kwargs) -> Tuple[torch.Tensor, torch.Tensor]:
    # input_pos: [B, 1]
    assert input_pos.shape[-1] == 1
    logits = model(x, input_pos)
    return sample(logits, **sampling_kwargs)


def main(compile: bool = True):
    global decode_one_token
    if compile:
        decode_one_token = torch.compile(decode_one_token, mode="reduce-overhead", fullgraph=True)
    model = Transformer().eval()
    return decode_one_token(model, torch.tensor([[3]]), torch.tensor([5]), temperature=0.8, top_k=200)


def make():
    torch.manual_seed(0)
    model = Transformer().eval()
    x = torch.tensor([[3]])
    input_pos = torch.tensor([5])

    # the sampling kwargs reach decode_one_token as keywords, the way generate() passes them
    def decode_step(model, x, input_pos, temperature=1.0, top_k=None):
        return decode_one_token(model, x, input_pos, temperature=temperature, top_k=top_k)

    return decode_step, [
        (model, x, input_pos),
        (model, x, input_pos, 0.8, 4),
        (model, x, input_pos, 0.8, 200),
    ]
