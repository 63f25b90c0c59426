"""DBRX experts: `expert_hit = ...nonzero()` and `torch.where(expert_mask[expert_idx])` computed under `torch.no_grad()`, then per-expert weight views.

Source: huggingface/transformers@v5.23.0:src/transformers/models/dbrx/modeling_dbrx.py:230-330
Census: penguinwu/oss-model-graph-break-corpus sweep_results/pt2.10 (DbrxModel eval, modeling_dbrx.py:310 "Dynamic shape operator", 316 "Data dependent operator").
Kept: DbrxExperts.forward verbatim (one_hot with num_experts + 1, the no_grad
blocks, the split_expert_shape views of the fused GLU weights), DbrxRouter with
its training jitter, and the top-k routing of DbrxFFN.
Simplified: SiLU GLU, 3 experts, hidden 8, ffn 12, top-2.
"""
import torch
from torch import nn


class DbrxConfig:
    hidden_size = 8
    ffn_hidden_size = 12
    moe_num_experts = 3
    moe_top_k = 2
    moe_jitter_eps = None
    moe_normalize_expert_weights = 1.0


class DbrxExpertGLU(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.hidden_size = config.hidden_size
        self.ffn_hidden_size = config.ffn_hidden_size
        self.moe_num_experts = config.moe_num_experts
        self.w1 = nn.Parameter(torch.randn(self.moe_num_experts * self.ffn_hidden_size, self.hidden_size) * 0.1)
        self.v1 = nn.Parameter(torch.randn(self.moe_num_experts * self.ffn_hidden_size, self.hidden_size) * 0.1)
        self.w2 = nn.Parameter(torch.randn(self.moe_num_experts * self.ffn_hidden_size, self.hidden_size) * 0.1)
        self.activation_fn = nn.SiLU()

    def forward(self, x, expert_w1, expert_v1, expert_w2):
        gate_proj = x.matmul(expert_w1.t())
        up_proj = x.matmul(expert_v1.t())
        gate_proj = self.activation_fn(gate_proj)
        intermediate_states = gate_proj * up_proj
        return intermediate_states.matmul(expert_w2)


class DbrxExperts(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.mlp = DbrxExpertGLU(config)
        self.hidden_size = config.hidden_size
        self.ffn_hidden_size = config.ffn_hidden_size
        self.num_experts = config.moe_num_experts

    def forward(self, hidden_states, top_k_index, top_k_weights):
        batch_size = hidden_states.shape[0]
        hidden_states = hidden_states.reshape(-1, self.hidden_size)

        next_states = torch.zeros_like(hidden_states, dtype=hidden_states.dtype, device=hidden_states.device)
        with torch.no_grad():
            expert_mask = torch.nn.functional.one_hot(top_k_index, num_classes=self.num_experts + 1)
            expert_mask = expert_mask.permute(2, 1, 0)
            expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()

        split_expert_shape = (-1, self.ffn_hidden_size, self.hidden_size)
        for expert_idx in expert_hit:
            expert_idx = expert_idx[0]
            with torch.no_grad():
                idx, token_idx = torch.where(expert_mask[expert_idx])
            v1 = self.mlp.v1.view(split_expert_shape)[expert_idx]
            w1 = self.mlp.w1.view(split_expert_shape)[expert_idx]
            w2 = self.mlp.w2.view(split_expert_shape)[expert_idx]
            states = self.mlp(hidden_states[token_idx], w1, v1, w2)
            states = states.view(-1, self.hidden_size) * top_k_weights[token_idx, idx, None]
            next_states.index_add_(0, token_idx, states)

        return next_states.view(batch_size, -1, self.hidden_size)


class DbrxRouter(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.hidden_size = config.hidden_size
        self.moe_jitter_eps = config.moe_jitter_eps
        self.layer = nn.Linear(self.hidden_size, config.moe_num_experts, bias=False)

    def forward(self, hidden_states):
        if self.training and self.moe_jitter_eps is not None:
            hidden_states *= torch.empty_like(hidden_states).uniform_(
                1.0 - self.moe_jitter_eps, 1.0 + self.moe_jitter_eps
            )
        hidden_states = hidden_states.view(-1, hidden_states.shape[-1])
        return self.layer(hidden_states)


class DbrxFFN(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.router = DbrxRouter(config)
        self.experts = DbrxExperts(config)
        self.moe_normalize_expert_weights = config.moe_normalize_expert_weights
        self.top_k = config.moe_top_k

    def route_tokens_to_experts(self, router_logits):
        router_logits = torch.nn.functional.softmax(router_logits, dim=1, dtype=router_logits.dtype)
        router_top_value, router_indices = torch.topk(router_logits, self.top_k, dim=-1)
        if self.moe_normalize_expert_weights is not None:
            router_top_value = router_top_value / torch.norm(
                router_top_value, p=self.moe_normalize_expert_weights, dim=-1, keepdim=True
            )
        return router_top_value, router_indices

    def forward(self, hidden_states):
        router_logits = self.router(hidden_states)
        top_k_weights, top_k_index = self.route_tokens_to_experts(router_logits)
        output = self.experts(hidden_states, top_k_index, top_k_weights)
        return output, router_logits


def make():
    torch.manual_seed(0)
    return DbrxFFN(DbrxConfig()).eval(), [(torch.randn(1, 6, 8),)]


def build_model(config):
    return torch.compile(DbrxFFN(config).eval(), mode="reduce-overhead")
