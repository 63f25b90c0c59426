"""HiDream/DeepSeek-style MoE inference: `flat_expert_indices.bincount().cpu().numpy().cumsum(0)` and a loop
with `if start_idx == end_idx: continue` over NumPy counts.

Source: https://github.com/huggingface/diffusers/pull/11477 (src/diffusers/models/transformers/
transformer_hidream_image.py `MOEFeedForwardSwiGLU.moe_infer`, the review thread at line 394)
Kept: moe_infer (argsort, bincount->numpy cumsum, token index division, per-expert slices, scatter_reduce_)
and the forward's eval branch; the PR's test compiles the transformer with fullgraph.
Simplified: experts are Linear layers; the gate is a softmax top-k.
"""
import torch
from torch import nn


class MOEFeedForwardSwiGLU(nn.Module):
    def __init__(self, dim=4, num_routed_experts=3, num_activated_experts=2):
        super().__init__()
        self.num_activated_experts = num_activated_experts
        self.gate_proj = nn.Linear(dim, num_routed_experts, bias=False)
        self.experts = nn.ModuleList([nn.Linear(dim, dim) for _ in range(num_routed_experts)])
        self.shared_experts = nn.Linear(dim, dim)

    def gate(self, x):
        scores = self.gate_proj(x).softmax(dim=-1)
        topk_weight, topk_idx = torch.topk(scores, k=self.num_activated_experts, dim=-1, sorted=False)
        return topk_idx, topk_weight, None

    def forward(self, x):
        wtype = x.dtype
        identity = x
        orig_shape = x.shape
        topk_idx, topk_weight, aux_loss = self.gate(x)
        x = x.view(-1, x.shape[-1])
        flat_topk_idx = topk_idx.view(-1)
        y = self.moe_infer(x, flat_topk_idx, topk_weight.view(-1, 1)).view(*orig_shape)
        y = y + self.shared_experts(identity)
        return y.to(wtype)

    @torch.no_grad()
    def moe_infer(self, x, flat_expert_indices, flat_expert_weights):
        expert_cache = torch.zeros_like(x)
        idxs = flat_expert_indices.argsort()
        tokens_per_expert = flat_expert_indices.bincount().cpu().numpy().cumsum(0)
        token_idxs = idxs // self.num_activated_experts
        for i, end_idx in enumerate(tokens_per_expert):
            start_idx = 0 if i == 0 else tokens_per_expert[i - 1]
            if start_idx == end_idx:
                continue
            expert = self.experts[i]
            exp_token_idx = token_idxs[start_idx:end_idx]
            expert_tokens = x[exp_token_idx]
            expert_out = expert(expert_tokens)
            expert_out.mul_(flat_expert_weights[idxs[start_idx:end_idx]])

            # for fp16 and other dtype
            expert_cache = expert_cache.to(expert_out.dtype)
            expert_cache.scatter_reduce_(0, exp_token_idx.view(-1, 1).repeat(1, x.shape[-1]), expert_out, reduce="sum")
        return expert_cache


moe = torch.compile(MOEFeedForwardSwiGLU().eval(), fullgraph=True)


def make():
    torch.manual_seed(0)
    return MOEFeedForwardSwiGLU().eval(), [(torch.randn(1, 5, 4),)]
