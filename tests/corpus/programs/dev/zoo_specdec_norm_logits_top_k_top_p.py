"""Speculative-Decoding sampling helpers: `norm_logits` divides by a non-unit temperature, applies `top_k_top_p_filter` (top-k via `torch.min` of the top-k values and `torch.where`; top-p via `topp`, which boolean-indexes `sorted_indices[to_keep]` and writes `mask[indices_to_keep] = False`, `logits[mask] = -1e20`) and softmaxes; `sample` draws with `torch.multinomial`.

Source: romsto/Speculative-Decoding@9a6fb05218548714fef0c7a793704eb5059ef5e8:utils/sampling.py:1-95
Kept: topp, top_k_top_p_filter, norm_logits, sample verbatim; the compile entry wraps the
`norm_logits(...)` + `sample(...)` pair that speculative_decoding.py runs on each draft step.
Simplified: vocabulary of 12. The top-p path gets a 1-D logits row (the helper indexes dim 0 with
token ids, so it only works on a single row); top-k/temperature paths get the [1, vocab] row the
decoder passes.
"""
import torch
from torch import Tensor
from torch.nn import functional as F


def topp(logits: Tensor, top_p: float) -> Tensor:
    """
    Filter a distribution of logits using top-p filtering.

    Args:
        logits: logits distribution.
        top_p: keep top tokens with cumulative probability <= top_p.

    Returns:
        logits distribution.
    """
    sorted_logits, sorted_indices = torch.sort(logits, descending=True)
    cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
    to_keep = cumulative_probs <= top_p
    indices_to_keep = sorted_indices[to_keep]
    mask = torch.ones_like(logits, dtype=torch.bool)
    mask[indices_to_keep] = False
    logits[mask] = -1e20
    return logits


def top_k_top_p_filter(logits: Tensor, top_k: int = 0, top_p: float = 0.0) -> Tensor:
    """
    Filter a distribution of logits using top-k and top-p filtering.

    Args:
        logits: logits distribution.
        top_k: keep top k tokens with highest probability.
        top_p: keep top tokens with cumulative probability <= top_p.

    Returns:
        logits distribution.
    """
    if top_k > 0:
        top_k_tokens = torch.topk(logits, top_k, dim=-1).values
        min_logits = torch.min(top_k_tokens)
        logits = torch.where(
            logits < min_logits, torch.ones_like(logits) * -1e20, logits
        )
    if top_p > 0.0:
        logits = topp(logits, top_p)
    return logits


def norm_logits(
    logits: Tensor, temperature: float, top_k: float, top_p: float
) -> Tensor:
    """
    Normalize logits.

    Args:
        logits: logits distribution.
        temperature: temperature.
        top_k: keep top k tokens with highest probability.
        top_p: keep top tokens with cumulative probability <= top_p.

    Returns:
        normalized logits distribution.
    """
    if temperature != 1.0:
        logits = logits / temperature
    logits = top_k_top_p_filter(logits, top_k=top_k, top_p=top_p)
    probs = F.softmax(logits, dim=-1)
    return probs


def sample(logits: Tensor, num_samples: int = 1) -> Tensor:
    """
    Sample from a distribution.

    Args:
        logits: logits distribution.
        num_samples: number of samples.

    Returns:
        sampled tokens.
    """
    idx_next = torch.multinomial(logits, num_samples=num_samples)
    return idx_next


def draft_step(draft_logits, temperature, top_k, top_p):
    draft_logits = norm_logits(draft_logits, temperature, top_k, top_p)
    xi = sample(draft_logits)  # x_i ~ q_i(x)
    return xi, draft_logits


compiled_draft_step = torch.compile(draft_step)


def make():
    torch.manual_seed(0)
    row = torch.randn(1, 12) * 2
    flat = torch.randn(12) * 2
    return draft_step, [
        (row.clone(), 1.0, 0, 0.0),
        (row.clone(), 0.7, 5, 0.0),
        (flat.clone(), 1.0, 0, 0.9),
        (flat.clone(), 0.5, 4, 0.8),
    ]
