"""Llama 2 reference `Llama.generate`: `eos_reached |= ...` then `if all(eos_reached): break` iterates a bool tensor each step, and the prompt copy-in, top-p sampling and `.tolist()` post-processing run in the same frame.

Source: meta-llama/llama@689c7f261b9c5514636ecc3c5fefefcbb3e6eed7:llama/generation.py:116-215,389-418
Kept: generate as written (prompt padding with pad_id, input_text_mask,
the all-prompt logprobs branch, temperature/top-p vs argmax, the
`torch.where` keeping prompt tokens, token logprobs, the eos bookkeeping and
early stop, the echo/eos trimming of `tokens.tolist()`), sample_top_p, the
`@torch.inference_mode()` decorator.
Simplified: device "cuda" is the CPU; the Transformer is a stand-in with the
same `forward(tokens, start_pos)` call whose logits favour the token after the
last one (so EOS, id 2, follows 1); the tokenizer holds pad_id/eos_id only;
vocab 8, max_seq_len 8.
"""
from dataclasses import dataclass
from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class ModelArgs:
    dim: int = 8
    vocab_size: int = 8
    max_batch_size: int = 4
    max_seq_len: int = 8


class Tokenizer:
    def __init__(self):
        self.bos_id = 1
        self.eos_id = 2
        self.pad_id = -1


class Transformer(nn.Module):
    def __init__(self, params: ModelArgs):
        super().__init__()
        self.params = params
        self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)
        self.output = nn.Linear(params.dim, params.vocab_size, bias=False)
        with torch.no_grad():
            self.tok_embeddings.weight.copy_(torch.eye(params.vocab_size, params.dim))
            self.output.weight.copy_(torch.roll(torch.eye(params.vocab_size), 1, dims=0) * 4.0)

    @torch.inference_mode()
    def forward(self, tokens: torch.Tensor, start_pos: int):
        h = self.tok_embeddings(tokens)
        return self.output(h).float()


class Llama:
    def __init__(self, model: Transformer, tokenizer: Tokenizer):
        self.model = model
        self.tokenizer = tokenizer

    @torch.inference_mode()
    def generate(
        self,
        prompt_tokens: List[List[int]],
        max_gen_len: int,
        temperature: float = 0.6,
        top_p: float = 0.9,
        logprobs: bool = False,
        echo: bool = False,
    ) -> Tuple[List[List[int]], Optional[List[List[float]]]]:
        params = self.model.params
        bsz = len(prompt_tokens)
        assert bsz <= params.max_batch_size, (bsz, params.max_batch_size)

        min_prompt_len = min(len(t) for t in prompt_tokens)
        max_prompt_len = max(len(t) for t in prompt_tokens)
        assert max_prompt_len <= params.max_seq_len
        total_len = min(params.max_seq_len, max_gen_len + max_prompt_len)

        pad_id = self.tokenizer.pad_id
        tokens = torch.full((bsz, total_len), pad_id, dtype=torch.long, device="cpu")
        for k, t in enumerate(prompt_tokens):
            tokens[k, : len(t)] = torch.tensor(t, dtype=torch.long, device="cpu")
        if logprobs:
            token_logprobs = torch.zeros_like(tokens, dtype=torch.float)

        prev_pos = 0
        eos_reached = torch.tensor([False] * bsz, device="cpu")
        input_text_mask = tokens != pad_id
        if min_prompt_len == total_len:
            logits = self.model.forward(tokens, prev_pos)
            token_logprobs = -F.cross_entropy(
                input=logits.transpose(1, 2),
                target=tokens,
                reduction="none",
                ignore_index=pad_id,
            )

        for cur_pos in range(min_prompt_len, total_len):
            logits = self.model.forward(tokens[:, prev_pos:cur_pos], prev_pos)
            if temperature > 0:
                probs = torch.softmax(logits[:, -1] / temperature, dim=-1)
                next_token = sample_top_p(probs, top_p)
            else:
                next_token = torch.argmax(logits[:, -1], dim=-1)

            next_token = next_token.reshape(-1)
            # only replace token if prompt has already been generated
            next_token = torch.where(
                input_text_mask[:, cur_pos], tokens[:, cur_pos], next_token
            )
            tokens[:, cur_pos] = next_token
            if logprobs:
                token_logprobs[:, prev_pos + 1 : cur_pos + 1] = -F.cross_entropy(
                    input=logits.transpose(1, 2),
                    target=tokens[:, prev_pos + 1 : cur_pos + 1],
                    reduction="none",
                    ignore_index=pad_id,
                )
            eos_reached |= (~input_text_mask[:, cur_pos]) & (
                next_token == self.tokenizer.eos_id
            )
            prev_pos = cur_pos
            if all(eos_reached):
                break

        if logprobs:
            token_logprobs = token_logprobs.tolist()
        out_tokens, out_logprobs = [], []
        for i, toks in enumerate(tokens.tolist()):
            # cut to max gen len
            start = 0 if echo else len(prompt_tokens[i])
            toks = toks[start : len(prompt_tokens[i]) + max_gen_len]
            probs = None
            if logprobs:
                probs = token_logprobs[i][start : len(prompt_tokens[i]) + max_gen_len]
            # cut to eos tok if any
            if self.tokenizer.eos_id in toks:
                eos_idx = toks.index(self.tokenizer.eos_id)
                toks = toks[:eos_idx]
                probs = probs[:eos_idx] if logprobs else None
            out_tokens.append(toks)
            out_logprobs.append(probs)
        return (out_tokens, out_logprobs if logprobs else None)


def sample_top_p(probs, p):
    """Perform top-p (nucleus) sampling on a probability distribution."""
    probs_sort, probs_idx = torch.sort(probs, dim=-1, descending=True)
    probs_sum = torch.cumsum(probs_sort, dim=-1)
    mask = probs_sum - probs_sort > p
    probs_sort[mask] = 0.0
    probs_sort.div_(probs_sort.sum(dim=-1, keepdim=True))
    next_token = torch.multinomial(probs_sort, num_samples=1)
    next_token = torch.gather(probs_idx, -1, next_token)
    return next_token


def build(max_batch_size: int = 4) -> Llama:
    model_args = ModelArgs(max_batch_size=max_batch_size)
    return Llama(Transformer(model_args), Tokenizer())


def make():
    torch.manual_seed(0)
    generator = build()
    return generator.generate, [
        ([[1, 5, 1], [4, 7, 0, 1]], 4, 0.0),
        ([[3, 4], [5]], 3, 0.0, 0.9, True, True),
        ([[3, 4, 5]], 2, 0.8, 0.5),
        ([[1, 3, 4, 5, 6, 7, 0, 1]], 2, 0.0, 0.9, True),
    ]


if __name__ == "__main__":
    llama = build()
    llama.generate = torch.compile(llama.generate)
    print(llama.generate([[1, 5, 1]], 4, 0.0))
