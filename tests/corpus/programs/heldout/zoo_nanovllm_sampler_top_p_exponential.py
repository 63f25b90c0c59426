"""nano-vllm Sampler: `@torch.compile`d forward doing temperature, top-p and Gumbel-style sampling.

Source: GeeeekExplorer/nano-vllm@3695b22e0f83216f151284f86336a182823fe658:nanovllm/layers/sampler.py:1-25
Kept: the Sampler module with its `@torch.compile` on `forward`, the in-place
`div_` by per-sequence temperatures, the sort/cumsum top-p mask with
`sorted_mask[..., 0] = False`, `masked_fill`, `zero_().scatter_`, the
renormalisation and the `exponential_(1).clamp_min_` trick before `argmax`.
Simplified: vocab of 16, batches of 2 and 3 sequences on CPU.
"""
import torch
from torch import nn


class Sampler(nn.Module):

    def __init__(self):
        super().__init__()

    @torch.compile
    def forward(self, logits: torch.Tensor, temperatures: torch.Tensor, top_ps: torch.Tensor):
        logits = logits.float().div_(temperatures.unsqueeze(dim=1))
        probs = torch.softmax(logits, dim=-1)
        sorted_probs, sorted_indices = torch.sort(probs, dim=-1, descending=True)
        cumulative_probs = torch.cumsum(sorted_probs, dim=-1)
        sorted_mask = cumulative_probs > top_ps.unsqueeze(dim=1)
        sorted_mask[..., 0] = False
        sorted_probs = sorted_probs.masked_fill(sorted_mask, 0.0)
        probs.zero_().scatter_(dim=-1, index=sorted_indices, src=sorted_probs)
        probs.div_(probs.sum(dim=-1, keepdim=True))
        sample_tokens = probs.div_(torch.empty_like(probs).exponential_(1).clamp_min_(1e-10)).argmax(dim=-1)
        return sample_tokens


def make():
    torch.manual_seed(0)
    sampler = Sampler()
    logits_a = torch.randn(2, 16)
    temps_a = torch.tensor([0.7, 1.0])
    top_ps_a = torch.tensor([0.9, 1.0])
    logits_b = torch.randn(3, 16)
    temps_b = torch.tensor([1.0, 0.5, 1.2])
    top_ps_b = torch.tensor([0.5, 0.95, 0.8])
    return Sampler.forward._torchdynamo_orig_callable, [
        (sampler, logits_a, temps_a, top_ps_a),
        (sampler, logits_b, temps_b, top_ps_b),
    ]
