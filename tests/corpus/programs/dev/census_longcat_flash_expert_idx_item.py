"""LongCat-Flash MoE: `for expert_idx_tensor in expert_hit: expert_idx = int(expert_idx_tensor.item())`,
then `if token_idx.numel() == 0: continue` and an identity ("zero") expert branch.

Source: huggingface/transformers@v5.23.0:src/transformers/models/longcat_flash/modeling_longcat_flash.py:175-205
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): LongcatFlashModel eval+train,
`modeling_longcat_flash.py:206 expert_hit = ...nonzero(...)` and `:208 expert_idx = int(expert_idx_tensor.item())`.
Kept: the one_hot routing mask, nonzero expert hits, the `.item()` loop, torch.where, the numel check,
the identity-expert branch for zero-computation experts, index_add_.
Simplified: 2 routed + 1 zero-computation expert, hidden 4, intermediate 3.
"""
import torch
import torch.nn.functional as F
from torch import nn


class LongcatFlashExperts(nn.Module):
    def __init__(self, hidden_size=4, intermediate_size=3, num_routed_experts=2, zero_expert_num=1):
        super().__init__()
        self.num_routed_experts = num_routed_experts
        self.total_experts = num_routed_experts + zero_expert_num
        self.gate_up_proj = nn.Parameter(torch.randn(num_routed_experts, 2 * intermediate_size, hidden_size) * 0.1)
        self.down_proj = nn.Parameter(torch.randn(num_routed_experts, hidden_size, intermediate_size) * 0.1)
        self.act_fn = nn.SiLU()
        self.identity_expert = nn.Identity()

    def forward(self, hidden_states, top_k_index, top_k_weights):
        final_hidden_states = torch.zeros_like(hidden_states)
        if top_k_index.numel() == 0:
            return final_hidden_states
        expert_mask = torch.nn.functional.one_hot(top_k_index, num_classes=self.total_experts).permute(2, 1, 0)

        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero(as_tuple=False)
        for expert_idx_tensor in expert_hit:
            expert_idx = int(expert_idx_tensor.item())
            selection_idx, token_idx = torch.where(expert_mask[expert_idx].squeeze(0))
            if token_idx.numel() == 0:
                continue
            current_state = hidden_states[token_idx]

            if expert_idx >= self.num_routed_experts or self.gate_up_proj is None:
                current_hidden_states = self.identity_expert(current_state)
            else:
                gate, up = F.linear(current_state, self.gate_up_proj[expert_idx]).chunk(2, dim=-1)
                current_hidden_states = self.act_fn(gate) * up
                current_hidden_states = F.linear(current_hidden_states, self.down_proj[expert_idx])

            current_hidden_states = current_hidden_states * top_k_weights[token_idx, selection_idx, None]
            final_hidden_states.index_add_(0, token_idx, current_hidden_states.to(final_hidden_states.dtype))

        return final_hidden_states


experts = torch.compile(LongcatFlashExperts())


def make():
    torch.manual_seed(0)
    h = torch.randn(4, 4)
    idx = torch.tensor([[0, 2], [1, 2], [0, 1], [2, 0]])
    w = torch.full((4, 2), 0.5)
    return LongcatFlashExperts(), [(h, idx, w)]
