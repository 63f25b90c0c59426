"""SGLang grouped top-k routing for DeepSeek-style MoE: group scores, a scatter-built group mask, masked top-k, an optional fused shared expert slot filled by `torch.randint`, and renormalisation (no data-dependent step).

Source: sgl-project/sglang@000328a8cd54dd3aac97cd9977c39b5408034b26:python/sglang/srt/layers/moe/topk.py:grouped_topk_gpu
Also: python/sglang/srt/utils (get_compiler_backend, is_npu).
Kept: grouped_topk_gpu verbatim, including its own decorator
`@torch.compile(dynamic=True, backend=get_compiler_backend(), disable=_is_npu)`.
Simplified: get_compiler_backend / is_npu reduced to the CUDA-or-CPU answers
("inductor", False); 8 experts in 4 groups, top 2 groups, top 3 experts.
"""
from typing import Optional

import torch


def is_npu() -> bool:
    return hasattr(torch, "npu") and torch.npu.is_available()


def get_compiler_backend() -> str:
    if hasattr(torch, "hpu") and torch.hpu.is_available():
        return "hpu_backend"
    return "inductor"


_is_npu = is_npu()


# This is used by the Deepseek V2/V3/R1 series models
@torch.compile(dynamic=True, backend=get_compiler_backend(), disable=_is_npu)
def grouped_topk_gpu(
    hidden_states: torch.Tensor,
    gating_output: torch.Tensor,
    topk: int,
    renormalize: bool,
    num_expert_group: Optional[int] = None,
    topk_group: Optional[int] = None,
    num_fused_shared_experts: int = 0,
    routed_scaling_factor: Optional[float] = None,
    apply_routed_scaling_factor_on_output: Optional[bool] = False,
):
    assert hidden_states.shape[0] == gating_output.shape[0], "Number of tokens mismatch"

    scores = torch.softmax(gating_output, dim=-1)
    num_token = scores.shape[0]
    num_experts = scores.shape[1]
    group_scores = (
        scores.view(num_token, num_expert_group, -1).max(dim=-1).values
    )  # [n, n_group]
    group_idx = torch.topk(group_scores, k=topk_group, dim=-1, sorted=False)[
        1
    ]  # [n, top_k_group]
    group_mask = torch.zeros_like(group_scores)  # [n, n_group]
    group_mask.scatter_(1, group_idx, 1)  # [n, n_group]
    score_mask = (
        group_mask.unsqueeze(-1)
        .expand(num_token, num_expert_group, scores.shape[-1] // num_expert_group)
        .reshape(num_token, -1)
    )  # [n, e]
    tmp_scores = scores.masked_fill(~score_mask.bool(), 0.0)  # [n, e]
    topk_weights, topk_ids = torch.topk(
        tmp_scores,
        k=topk,
        dim=-1,
        sorted=(True if num_fused_shared_experts > 0 else False),
    )
    if num_fused_shared_experts:
        topk_ids[:, -1] = torch.randint(
            low=num_experts,
            high=num_experts + num_fused_shared_experts,
            size=(topk_ids.size(0),),
            dtype=topk_ids.dtype,
            device=topk_ids.device,
        )
        if routed_scaling_factor is not None:
            topk_weights[:, -1] = (
                topk_weights[:, :-1].sum(dim=-1) / routed_scaling_factor
            )

    if renormalize:
        topk_weights_sum = (
            topk_weights.sum(dim=-1, keepdim=True)
            if num_fused_shared_experts == 0
            else topk_weights[:, :-1].sum(dim=-1, keepdim=True)
        )
        topk_weights = topk_weights / topk_weights_sum
        if apply_routed_scaling_factor_on_output:
            topk_weights *= routed_scaling_factor

    topk_weights, topk_ids = topk_weights.to(torch.float32), topk_ids.to(torch.int32)

    return topk_weights, topk_ids


def make():
    torch.manual_seed(0)
    hidden = torch.randn(5, 16)
    logits = torch.randn(5, 8)
    return grouped_topk_gpu._torchdynamo_orig_callable, [
        (hidden, logits, 3, True, 4, 2),
        (hidden, logits, 3, True, 4, 2, 1, 2.5, True),
        (hidden, logits, 3, False, 4, 2, 1, None),
    ]
