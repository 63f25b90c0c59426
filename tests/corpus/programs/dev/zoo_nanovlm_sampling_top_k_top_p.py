"""nanoVLM decode-step sampling: greedy argmax or top-k / nucleus filtering (`torch.topk`, sort, cumsum, scatter, masked_fill) followed by temperature softmax and `torch.multinomial`.

Source: huggingface/nanoVLM@4e0c0961846135c2217f95e54cb4c2d66eb55e42:models/utils.py:27-50
Also: models/vision_language_model.py:116-124 (the sampling lines of the decode loop in
VisionLanguageModel.generate: `if greedy: ... else: filtered_logits = top_k_top_p_filtering(...)`).
Kept: top_k_top_p_filtering verbatim (the `min(top_k, logits.size(-1))` clamp, the `top_k > 0`
and `top_p < 1.0` branches, `sorted_indices_to_remove[..., 0] = False`), the loop body's sampling.
Simplified: the loop body's sampling is lifted into a function of its own and compiled
(generate itself runs under @torch.inference_mode eagerly); vocab 40.
"""
import torch


def top_k_top_p_filtering(logits, top_k=0, top_p=1.0, filter_value=-float('Inf')):
    """
    Apply top-k and/or nucleus (top-p) filtering to logits.
    """
    top_k = min(top_k, logits.size(-1))  # Safety

    if top_k > 0:
        # Remove all tokens with a probability less than the top-k tokens
        indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
        logits = logits.masked_fill(indices_to_remove, filter_value)

    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.softmax(sorted_logits, dim=-1).cumsum(dim=-1)

        # Remove tokens with cumulative probability above top_p
        sorted_indices_to_remove = cumulative_probs > top_p

        # Always keep the first token
        sorted_indices_to_remove[..., 0] = False

        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
        logits = logits.masked_fill(indices_to_remove, filter_value)

    return logits


@torch.compile(dynamic=False)
def sample_next_token(current_logits, greedy=False, top_k=50, top_p=0.9, temperature=0.5):
    if greedy:
        next_token_id = torch.argmax(current_logits, dim=-1, keepdim=True)
    else:
        filtered_logits = top_k_top_p_filtering(current_logits, top_k=top_k, top_p=top_p)
        probs = torch.softmax(filtered_logits / temperature, dim=-1)
        next_token_id = torch.multinomial(probs, num_samples=1)
    return next_token_id


def make():
    torch.manual_seed(0)
    logits = torch.randn(2, 40)
    return sample_next_token._torchdynamo_orig_callable, [
        (logits,),
        (logits, True),
        (logits, False, 0, 1.0, 1.0),
        (logits, False, 8, 1.0, 0.7),
    ]
