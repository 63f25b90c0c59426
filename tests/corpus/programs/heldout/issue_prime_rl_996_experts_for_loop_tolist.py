"""MoE grouped experts run as a Python loop: `num_tokens_per_expert.tolist()` feeds `torch.split`.

Source: https://github.com/PrimeIntellect-ai/prime-rl/issues/996 (prime_rl/trainer/custom_models/layers/moe.py:76
`_run_experts_for_loop`, the torchtitan MoE helper)
Kept: `_run_experts_for_loop` (tolist, padding count, split, per-expert SwiGLU matmuls, cat, vstack of zero
padding) and a GroupedExperts module calling it; the trainer compiles the model (`--model.compile`).
Simplified: 3 experts of width 4/6; routing counts are given.
"""
import torch
import torch.nn.functional as F
from torch import nn


def _run_experts_for_loop(w1, w2, w3, x, num_tokens_per_expert):
    # NOTE: this would incur a synchronization between device and host
    num_tokens_per_expert = num_tokens_per_expert.tolist()

    # side-effect code due to the usage of generate_permute_indices
    num_padding = x.shape[0] - sum(num_tokens_per_expert)

    # a tuple of tensors indexed by experts
    # each with shape (tokens_per_expert(varying), dim)
    x = torch.split(
        x[: sum(num_tokens_per_expert)],
        split_size_or_sections=num_tokens_per_expert,
        dim=0,
    )
    out_experts_splits = []
    for expert_idx, x_expert in enumerate(x):
        h = F.silu(torch.matmul(x_expert, w1[expert_idx].transpose(-2, -1)))
        h = h * torch.matmul(x_expert, w3[expert_idx].transpose(-2, -1))
        h = torch.matmul(h, w2[expert_idx].transpose(-2, -1))
        # h shape (tokens_per_expert(varying), dim)
        out_experts_splits.append(h)
    out = torch.cat(out_experts_splits, dim=0)

    # side-effect code due to the usage of generate_permute_indices
    out = torch.vstack((out, out.new_zeros((num_padding, out.shape[-1]))))

    return out


class GroupedExperts(nn.Module):
    def __init__(self, dim=4, hidden_dim=6, num_experts=3):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(num_experts, hidden_dim, dim) * 0.1)
        self.w2 = nn.Parameter(torch.randn(num_experts, dim, hidden_dim) * 0.1)
        self.w3 = nn.Parameter(torch.randn(num_experts, hidden_dim, dim) * 0.1)

    def forward(self, x, num_tokens_per_expert):
        return _run_experts_for_loop(self.w1, self.w2, self.w3, x, num_tokens_per_expert)


def build_model(compile_model=True):
    model = GroupedExperts()
    if compile_model:
        model = torch.compile(model)
    return model


def make():
    torch.manual_seed(0)
    return GroupedExperts(), [(torch.randn(8, 4), torch.tensor([2, 3, 1], dtype=torch.int32))]
