"""LlamaGen token sampler: `sample` scales the last-position logits by temperature, applies HF-style `top_k_top_p_filtering` (topk threshold, sorted cumulative softmax, scatter back, boolean-mask fill) and draws with multinomial or topk.

Source: FoundationVision/LlamaGen@5a50452db783a1351073a42eab4cac4eda80f618:autoregressive/models/generate.py:15-67
Kept: top_k_top_p_filtering and sample verbatim (including the
min_tokens_to_keep branch and the builtin min/max clamps of top_k).
Simplified: called directly on (batch, seq, vocab) logits with vocab 64.
LlamaGen compiles the GPT model (sample_c2i.py); here the sampler that
generate() calls after each model step is the compiled entry.
"""
import torch
import torch.nn as nn
from torch.nn import functional as F


### from https://huggingface.co/transformers/v3.2.0/_modules/transformers/generation_utils.html
def top_k_top_p_filtering(
    logits,
    top_k: int = 0,
    top_p: float = 1.0,
    filter_value: float = -float("Inf"),
    min_tokens_to_keep: int = 1,
):
    """Filter a distribution of logits using top-k and/or nucleus (top-p) filtering
    Args:
        logits: logits distribution shape (batch size, vocabulary size)
        if top_k > 0: keep only top k tokens with highest probability (top-k filtering).
        if top_p < 1.0: keep the top tokens with cumulative probability >= top_p (nucleus filtering).
            Nucleus filtering is described in Holtzman et al. (http://arxiv.org/abs/1904.09751)
        Make sure we keep at least min_tokens_to_keep per batch example in the output
    From: https://gist.github.com/thomwolf/1a5a29f6962089e871b94cbd09daf317
    """
    if top_k > 0:
        top_k = min(max(top_k, min_tokens_to_keep), logits.size(-1))  # Safety check
        # Remove all tokens with a probability less than the last token of the top-k
        indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
        logits[indices_to_remove] = filter_value

    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)

        # Remove tokens with cumulative probability above the threshold (token with 0 are kept)
        sorted_indices_to_remove = cumulative_probs > top_p
        if min_tokens_to_keep > 1:
            # Keep at least min_tokens_to_keep (set to min_tokens_to_keep-1 because we add the first one below)
            sorted_indices_to_remove[..., :min_tokens_to_keep] = 0
        # Shift the indices to the right to keep also the first token above the threshold
        sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
        sorted_indices_to_remove[..., 0] = 0

        # scatter sorted tensors to original indexing
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        logits[indices_to_remove] = filter_value
    return logits


def sample(logits, temperature: float=1.0, top_k: int=0, top_p: float=1.0, sample_logits=True):
    logits = logits[:, -1, :] / max(temperature, 1e-5)
    if top_k > 0 or top_p < 1.0:
        logits = top_k_top_p_filtering(logits, top_k=top_k, top_p=top_p)
    probs = F.softmax(logits, dim=-1)
    if sample_logits:
        idx = torch.multinomial(probs, num_samples=1)
    else:
        _, idx = torch.topk(probs, k=1, dim=-1)
    return idx, probs


compiled_sample = torch.compile(sample, mode="reduce-overhead", fullgraph=True)


def make():
    torch.manual_seed(0)
    logits = torch.randn(4, 3, 64)
    return sample, [
        (logits, 1.0, 0, 1.0, True),
        (logits, 1.0, 2000, 1.0, True),
        (logits, 0.7, 8, 0.9, True),
        (logits, 1.0, 0, 0.95, False),
    ]
