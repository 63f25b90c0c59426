"""Liger GRPO chunk loss, SAPO branch: per-token loss written through boolean advantage masks.

Source: linkedin/Liger-Kernel#1274 (https://github.com/linkedin/Liger-Kernel/pull/1274)
The thread: the SAPO branch of the GRPO loss assigns
`per_token_loss[mask] = sapo_loss_fn(coef_1[mask], ...)`; boolean-mask indexing
lowers to `aten.nonzero` (data-dependent shape), so torch.compile breaks the graph.
This program is the pre-fix code: k3_loss_fn, sapo_loss_fn, clip_coef_fn and
LigerFusedLinearGRPOFunction.ppo_loss_fn from
linkedin/Liger-Kernel@00027d8f:src/liger_kernel/chunked_loss/grpo_loss.py, called
from a chunk step shaped like LigerFusedLinearPPOBase._compute_chunk_loss /
chunk_forward (src/liger_kernel/chunked_loss/fused_linear_ppo.py), which Liger
compiles when `compiled=True`.
Kept: ppo_loss_fn's branches for the loss types and the importance-sampling level,
the metrics list, the reference-logps fallback under torch.no_grad().
Simplified: the chunking loop, the torch.func grad accumulation and the
autograd.Function are dropped (the compiled unit is the chunk loss itself);
chunk_forward is the plain log_softmax over full logits of that era; the dapo
normalizer's distributed all_reduce is dropped; hidden 8, vocab 11, 2x5 tokens.
"""
import functools

import torch
import torch.nn.functional as F


def k3_loss_fn(log_p, log_q):
    # computes k3 estimate of KL[q, p]
    # ref: http://joschu.net/blog/kl-approx.html
    return torch.exp(log_p - log_q) - (log_p - log_q) - 1.0


def sapo_loss_fn(importance_ratio: torch.Tensor, temperature: float) -> torch.Tensor:
    if temperature <= 0:
        raise ValueError("sapo_temperature must be > 0.")
    sigmoid_input = temperature * (importance_ratio - 1)
    sigmoid_smoothed_loss = torch.sigmoid(sigmoid_input)
    return sigmoid_smoothed_loss * 4 / temperature


def clip_coef_fn(coef, epsilon_low, epsilon_high, loss_type):
    if loss_type == "cispo":
        # CISPO: clip and detach the importance weights
        upper_bound = epsilon_high
        lower_bound = None
        clipped_coef = torch.clamp(coef, lower_bound, upper_bound).detach()
        is_lower_clipped = False
        is_upper_clipped = coef > upper_bound
    elif loss_type == "sapo":
        # SAPO doesn't use clipping metrics
        clipped_coef = None
        is_lower_clipped = torch.zeros_like(coef, dtype=torch.bool)
        is_upper_clipped = torch.zeros_like(coef, dtype=torch.bool)
    else:
        upper_bound = 1 + epsilon_high
        lower_bound = 1 - epsilon_low
        clipped_coef = torch.clamp(coef, lower_bound, upper_bound)
        is_lower_clipped = coef < lower_bound
        is_upper_clipped = coef > upper_bound
    return clipped_coef, is_lower_clipped, is_upper_clipped


def _compute_dapo_normalizer(attention_mask):
    normalizer = attention_mask.to(torch.float32).sum()
    return torch.clamp(normalizer, min=1.0)


def ppo_loss_fn(
    log_probs,
    selected_token_ids,
    attention_mask,
    advantages,
    full_attention_mask,
    ref_per_token_logps=None,  # shape: [chunk_size, seq_len]
    old_per_token_logps=None,
    ref_log_probs=None,  # used when ref_per_token_logps is None (shape: [chunk_size, seq_len, vocab_size])
    epsilon_low=0.2,
    epsilon_high=0.2,
    beta=0.04,
    loss_type="dapo",  # ["grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo"]
    max_completion_length=None,  # Required for dr_grpo
    importance_sampling_level="token",  # ["token", "sequence"] - new parameter for GSPO
    sapo_temperature_pos=1.0,  # Temperature for positive advantages in SAPO
    sapo_temperature_neg=1.05,  # Temperature for negative advantages in SAPO
    **kwargs,
):
    """GRPO Loss Function matching GRPOTrainer implementation."""
    per_token_logps = log_probs.gather(dim=-1, index=selected_token_ids.unsqueeze(-1)).squeeze(
        -1
    )  # (batch_size, seq_len)

    # Get reference model probabilities
    if ref_per_token_logps is None:
        if ref_log_probs is not None:
            with torch.no_grad():
                ref_per_token_logps = ref_log_probs.gather(dim=-1, index=selected_token_ids.unsqueeze(-1)).squeeze(
                    -1
                )
        else:
            ref_per_token_logps = per_token_logps.detach()

    # Compute policy gradient loss with importance sampling ratio
    old_per_token_logps = old_per_token_logps if old_per_token_logps is not None else per_token_logps.detach()
    log_ratio = per_token_logps - old_per_token_logps

    if importance_sampling_level == "token":
        log_importance_weights = log_ratio
    elif importance_sampling_level == "sequence":
        log_importance_weights = (log_ratio * attention_mask).sum(-1) / attention_mask.sum(-1).clamp(min=1.0)
        log_importance_weights = log_importance_weights.unsqueeze(-1)
    else:
        raise ValueError(
            f"Unknown importance sampling level: {importance_sampling_level}. Possible values are 'token' "
            "and 'sequence'."
        )

    coef_1 = torch.exp(log_importance_weights)
    coef_2, is_lower_clipped, is_upper_clipped = clip_coef_fn(coef_1, epsilon_low, epsilon_high, loss_type)
    if loss_type == "cispo":
        per_token_loss = -coef_2 * advantages.unsqueeze(1) * per_token_logps
    elif loss_type == "sapo":
        # SAPO: Soft Adaptive Policy Optimization
        # Uses sigmoid-based soft gating instead of hard clipping
        per_token_loss = torch.empty_like(coef_1)
        # Expand advantages to match coef_1 shape for masking
        advantages_expanded = advantages.unsqueeze(1).expand_as(coef_1)
        positive_advantages_mask = advantages_expanded > 0

        # Apply different temperatures based on advantage sign
        per_token_loss[positive_advantages_mask] = sapo_loss_fn(
            coef_1[positive_advantages_mask], sapo_temperature_pos
        )
        per_token_loss[~positive_advantages_mask] = sapo_loss_fn(
            coef_1[~positive_advantages_mask], sapo_temperature_neg
        )
        per_token_loss = -per_token_loss * advantages_expanded
    else:
        per_token_loss1 = coef_1 * advantages.unsqueeze(1)
        per_token_loss2 = coef_2 * advantages.unsqueeze(1)
        per_token_loss = -torch.min(per_token_loss1, per_token_loss2)

    if beta != 0.0:
        # Compute KL penalty (approximates KL[per_token_logps, ref_per_token_logps])
        kl_div = k3_loss_fn(ref_per_token_logps, per_token_logps)
        # Combine losses
        per_token_loss = per_token_loss + beta * kl_div

    if loss_type == "grpo" or loss_type == "sapo":
        # Average per-sequence loss (SAPO uses same normalization as GRPO)
        loss = (
            (per_token_loss * attention_mask).sum(-1) / torch.clamp(attention_mask.sum(-1), min=1.0)
        ).sum() / full_attention_mask.shape[0]
    elif loss_type == "bnpo":
        loss = (per_token_loss * attention_mask).sum() / torch.clamp(full_attention_mask.sum(), min=1.0)
    elif loss_type == "dr_grpo":
        if max_completion_length is None:
            raise ValueError("max_completion_length must be provided for loss_type 'dr_grpo'")
        loss = (per_token_loss * attention_mask).sum() / (full_attention_mask.shape[0] * max_completion_length)
    elif loss_type == "dapo" or loss_type == "cispo":
        loss_normalizer = _compute_dapo_normalizer(full_attention_mask)
        loss = (per_token_loss * attention_mask).sum() / loss_normalizer
    else:
        raise ValueError(f"Unknown loss type: {loss_type}")

    # Calculate metrics
    metrics = []
    if beta != 0.0:
        metrics.append(((kl_div * attention_mask).sum() / torch.clamp(full_attention_mask.sum(), min=1.0)))

    # Adjust clipping metric calculation based on importance sampling level
    if importance_sampling_level == "token":
        is_clipped = (is_lower_clipped & (advantages.unsqueeze(1) < 0)) | (
            is_upper_clipped & (advantages.unsqueeze(1) > 0)
        )
    else:  # sequence level
        is_clipped = (is_lower_clipped & (advantages.unsqueeze(1) < 0)) | (
            is_upper_clipped & (advantages.unsqueeze(1) > 0)
        )
        is_clipped = is_clipped.expand_as(attention_mask)

    metrics.append((is_clipped * attention_mask).sum() / torch.clamp(full_attention_mask.sum(), min=1.0))
    return loss, metrics


def chunk_forward(input_chunk, weight, bias=None, temperature=1.0):
    logits = input_chunk @ weight.t()
    if bias is not None:
        logits = logits + bias
    if temperature != 1.0:
        logits = logits / temperature
    log_probs = F.log_softmax(logits.float(), dim=-1)
    return log_probs, logits


def _compute_chunk_loss(
    input_chunk,
    weight,
    selected_token_ids_chunk,
    attention_mask_chunk,
    advantages_chunk,
    bias=None,
    ref_per_token_logps_chunk=None,
    old_per_token_logps_chunk=None,
    ref_input_chunk=None,
    ref_weight=None,
    ref_bias=None,
    full_attention_mask=None,
    epsilon_low=0.2,
    epsilon_high=0.2,
    beta=0.04,
    loss_type="dapo",
    max_completion_length=None,
    importance_sampling_level="token",
    temperature=1.0,
    use_ref_model=False,
    ppo_loss_fn=None,
    sapo_temperature_pos=1.0,
    sapo_temperature_neg=1.05,
):
    """Compute loss for a single chunk."""
    log_probs, _ = chunk_forward(input_chunk, weight, bias=bias, temperature=temperature)

    ref_log_probs = None
    if use_ref_model and ref_per_token_logps_chunk is None:
        with torch.no_grad():
            ref_log_probs, _ = chunk_forward(ref_input_chunk, ref_weight, bias=ref_bias, temperature=temperature)

    chunk_loss, chunk_metrics = ppo_loss_fn(
        log_probs=log_probs,
        selected_token_ids=selected_token_ids_chunk,
        attention_mask=attention_mask_chunk,
        advantages=advantages_chunk,
        full_attention_mask=full_attention_mask,
        ref_per_token_logps=ref_per_token_logps_chunk.float() if ref_per_token_logps_chunk is not None else None,
        old_per_token_logps=old_per_token_logps_chunk.float() if old_per_token_logps_chunk is not None else None,
        ref_log_probs=ref_log_probs,
        epsilon_low=epsilon_low,
        epsilon_high=epsilon_high,
        beta=beta,
        loss_type=loss_type,
        max_completion_length=max_completion_length,
        importance_sampling_level=importance_sampling_level,
        sapo_temperature_pos=sapo_temperature_pos,
        sapo_temperature_neg=sapo_temperature_neg,
    )
    return chunk_loss, chunk_metrics


def sapo_chunk_loss(input_chunk, weight, selected_token_ids_chunk, attention_mask_chunk, advantages_chunk,
                    old_per_token_logps_chunk=None):
    return _compute_chunk_loss(
        input_chunk,
        weight,
        selected_token_ids_chunk,
        attention_mask_chunk,
        advantages_chunk,
        old_per_token_logps_chunk=old_per_token_logps_chunk,
        full_attention_mask=attention_mask_chunk,
        beta=0.04,
        loss_type="sapo",
        ppo_loss_fn=ppo_loss_fn,
    )


compute_loss = torch.compile(functools.partial(sapo_chunk_loss))


def make():
    torch.manual_seed(0)
    hidden = torch.randn(2, 5, 8, requires_grad=True)
    weight = torch.randn(11, 8, requires_grad=True)
    ids = torch.randint(11, (2, 5))
    mask = torch.ones(2, 5)
    mask[1, 3:] = 0
    advantages = torch.tensor([0.5, -1.0])
    old = torch.randn(2, 5) - 3.0
    return sapo_chunk_loss, [
        (hidden, weight, ids, mask, advantages),
        (hidden, weight, ids, mask, advantages, old),
    ]
