"""Mixtral-style experts: `expert_hit = ...nonzero()` then a Python loop over hit experts with
`if expert_idx == self.num_experts` and `torch.where` on the routing mask.

Source: huggingface/transformers@v5.23.0:src/transformers/models/mixtral/modeling_mixtral.py:55-92
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): DbrxModel / LongcatFlashModel
`expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()` (the shared MoE experts loop).
Kept: MixtralExperts.forward (one_hot routing mask under no_grad, nonzero, the loop, where, index_add_)
and the top-k router in the sparse block.
Simplified: 4 experts of size 8, SiLU activation hard-coded.
"""
import torch
from torch import nn


class MixtralConfig:
    num_local_experts = 4
    num_experts_per_tok = 2
    hidden_size = 8
    intermediate_size = 6


class MixtralExperts(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_experts = config.num_local_experts
        self.gate_up_proj = nn.Parameter(torch.randn(self.num_experts, 2 * config.intermediate_size, config.hidden_size) * 0.1)
        self.down_proj = nn.Parameter(torch.randn(self.num_experts, config.hidden_size, config.intermediate_size) * 0.1)
        self.act_fn = nn.SiLU()

    def forward(self, hidden_states, top_k_index, top_k_weights):
        final_hidden_states = torch.zeros_like(hidden_states)
        with torch.no_grad():
            expert_mask = torch.nn.functional.one_hot(top_k_index, num_classes=self.num_experts + 1)
            expert_mask = expert_mask.permute(2, 1, 0)
            expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()

        for expert_idx in expert_hit:
            expert_idx = expert_idx[0]
            if expert_idx == self.num_experts:
                continue
            top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[token_idx]
            gate, up = nn.functional.linear(current_state, self.gate_up_proj[expert_idx]).chunk(2, dim=-1)
            current_hidden_states = self.act_fn(gate) * up
            current_hidden_states = nn.functional.linear(current_hidden_states, self.down_proj[expert_idx])
            current_hidden_states = current_hidden_states * top_k_weights[token_idx, top_k_pos, None]
            final_hidden_states.index_add_(0, token_idx, current_hidden_states.to(final_hidden_states.dtype))

        return final_hidden_states


class MixtralSparseMoeBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.top_k = config.num_experts_per_tok
        self.gate = nn.Linear(config.hidden_size, config.num_local_experts, bias=False)
        self.experts = MixtralExperts(config)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = torch.softmax(router_logits, dim=-1, dtype=torch.float)
        top_k_weights, top_k_index = torch.topk(routing_weights, self.top_k, dim=-1)
        top_k_weights /= top_k_weights.sum(dim=-1, keepdim=True)
        out = self.experts(hidden_states, top_k_index, top_k_weights.to(hidden_states.dtype))
        return out.reshape(batch_size, sequence_length, hidden_dim)


moe = torch.compile(MixtralSparseMoeBlock(MixtralConfig()))


def make():
    torch.manual_seed(0)
    return MixtralSparseMoeBlock(MixtralConfig()), [(torch.randn(2, 5, 8),)]
