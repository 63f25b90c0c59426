"""GM401 bad: the transformers 5.x eager experts loop (`MixtralExperts.forward`), unsafe dense fix.

`expert_hit = ....nonzero()` has a data-dependent size (GB0036) and
`if expert_idx == self.num_experts` branches on a 0-d tensor (GB0170); inside
the loop Dynamo gives up on the frame. The fix runs every expert on every
token and keeps the routed tokens' contributions with `torch.where`: equal
within rounding, at num_experts / top_k times the expert FLOPs.
"""
import torch
from torch import nn


class Experts(nn.Module):
    """Expert weights stored as 3-D tensors; class `num_experts` is the padding sentinel."""

    def __init__(self, num_experts: int = 4, hidden: int = 8, intermediate: int = 6) -> None:
        super().__init__()
        self.num_experts = num_experts
        self.gate_up_proj = nn.Parameter(torch.randn(num_experts, 2 * intermediate, hidden) * 0.3)
        self.down_proj = nn.Parameter(torch.randn(num_experts, hidden, intermediate) * 0.3)
        self.act_fn = nn.SiLU()

    def forward(
        self, hidden_states: torch.Tensor, top_k_index: torch.Tensor, top_k_weights: torch.Tensor
    ) -> torch.Tensor:
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


def make():
    """Return (eager_callable, input_sets): top-2 routing, a token padded to the sentinel, one token, and
    tokens that list one expert twice (a hash router's table, DeepSeek-V4's ``tid2eid``, may)."""
    torch.manual_seed(0)
    hidden = torch.randn(6, 8)
    weights, index = torch.randn(6, 4).softmax(-1).topk(2, dim=-1)
    padded = index.clone()
    padded[2, 1] = 4  # routed to the padding class: skipped
    twice = index.clone()
    twice[:3, 1] = twice[:3, 0]  # each of the first three tokens gets its expert's contribution twice
    return Experts(), [
        (hidden, index, weights),
        (hidden, padded, weights),
        (hidden[:1], index[:1], weights[:1]),
        (hidden, twice, weights),
    ]


compiled = torch.compile(Experts())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
