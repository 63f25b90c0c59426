"""Gemma's Sampler: a `@torch.no_grad()` forward that selects the output positions, soft-caps logits from the config, returns argmax when `temperatures is None`, and otherwise masks top-p/top-k with `torch.where` before `torch.multinomial` (no break).

Source: google/gemma_pytorch@014acb7ac4563a5f77c76d7ff98f31b568c16508:gemma/model.py:27-88
Also: gemma/config.py (GemmaConfig, get_config_for_2b_v2's final_logit_softcapping).
Kept: Sampler verbatim, the GemmaConfig dataclass fields it reads.
Simplified: vocab 10, hidden 8; GemmaConfig keeps only the fields used here.
"""
import dataclasses
from typing import Optional, Tuple, Union

import torch
from torch import nn


@dataclasses.dataclass
class GemmaConfig:
    vocab_size: int = 10
    hidden_size: int = 8
    final_logit_softcapping: Optional[float] = None


class Sampler(nn.Module):

    def __init__(self, vocab_size: int, config: GemmaConfig):
        super().__init__()
        self.vocab_size = vocab_size
        self.config = config

    @torch.no_grad()
    def forward(
        self,
        embedding: torch.Tensor,
        hidden_states: torch.Tensor,
        output_positions: torch.Tensor,
        temperatures: Union[torch.Tensor, None],
        top_ps: torch.Tensor,
        top_ks: torch.Tensor,
        embedding_bias: Optional[torch.Tensor] = None,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        # Select the last element for each sequence.
        # (batch_size, input_len, hidden_size) -> (batch_size, hidden_size)
        hidden_states = hidden_states.index_select(
            1, output_positions).squeeze(dim=1)
        logits = torch.matmul(hidden_states, embedding.t())
        if embedding_bias is not None:
            logits += embedding_bias
        if self.config.final_logit_softcapping is not None:
            logits = logits / self.config.final_logit_softcapping
            logits = torch.tanh(logits)
            logits = logits * self.config.final_logit_softcapping

        if temperatures is None:
            return torch.argmax(logits, dim=-1).squeeze(dim=-1), logits

        # Apply temperature scaling.
        logits.div_(temperatures.unsqueeze(dim=1))

        # Calculate probabilities with softmax.
        probs = torch.softmax(logits, dim=-1, dtype=torch.float)
        probs_sort, probs_idx = torch.sort(probs, dim=-1, descending=True)

        # Apply top-p, top-k.
        probs_sum = torch.cumsum(probs_sort, dim=-1)
        top_ps_mask = (probs_sum - probs_sort) > top_ps.unsqueeze(dim=1)
        probs_sort = torch.where(top_ps_mask, 0, probs_sort)

        top_ks_mask = torch.arange(probs_idx.shape[-1],
                                   device=probs_idx.device)
        top_ks_mask = top_ks_mask.expand(probs_idx.shape[0], -1)
        top_ks_mask = top_ks_mask >= top_ks.unsqueeze(dim=1)
        probs_sort = torch.where(top_ks_mask, 0, probs_sort)

        # Re-normalization.
        probs_sort.div_(probs_sort.sum(dim=-1, keepdim=True))
        probs = torch.gather(probs_sort,
                             dim=-1,
                             index=torch.argsort(probs_idx, dim=-1))

        next_token_ids = torch.multinomial(probs,
                                           num_samples=1,
                                           replacement=True).squeeze(dim=-1)
        return next_token_ids, logits


config = GemmaConfig(final_logit_softcapping=30.0)
sampler = torch.compile(Sampler(config.vocab_size, config))


def make():
    torch.manual_seed(0)
    embedding = torch.randn(config.vocab_size, config.hidden_size)
    hidden_states = torch.randn(2, 5, config.hidden_size)
    output_positions = torch.tensor([4])
    temperatures = torch.tensor([0.9, 0.6])
    top_ps = torch.tensor([0.95, 0.5])
    top_ks = torch.tensor([5, 2])
    bias = torch.randn(config.vocab_size)
    return Sampler(config.vocab_size, config), [
        (embedding, hidden_states, output_positions, temperatures, top_ps, top_ks),
        (embedding, hidden_states, output_positions, None, top_ps, top_ks, bias),
    ]
