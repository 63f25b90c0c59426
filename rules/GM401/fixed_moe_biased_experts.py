"""GM401 bad: the gpt-oss style experts loop (`@` products, per-expert biases, a gate helper), unsafe dense fix.

Same dispatch as `bad_moe_experts.py` (`expert_hit = ....nonzero()`, GB0036,
and `if expert_idx == self.num_experts`, GB0170), but each expert is
`rows @ W[e] + b[e]` in float32 with a clamped GLU computed by a helper
method (transformers' gpt_oss and openai_privacy_filter). The fix runs every
expert on every token and keeps the routed tokens' contributions with
`torch.where`: equal within rounding, at num_experts / top_k times the FLOPs.
"""
import torch
from torch import nn


class BiasedExperts(nn.Module):
    """Transposed expert weights with biases; the gate clamps and uses a scaled sigmoid."""

    def __init__(self, num_experts: int = 4, hidden: int = 8, intermediate: int = 6) -> None:
        super().__init__()
        self.num_experts = num_experts
        self.gate_up_proj = nn.Parameter(torch.randn(num_experts, hidden, 2 * intermediate) * 0.3)
        self.gate_up_proj_bias = nn.Parameter(torch.randn(num_experts, 2 * intermediate) * 0.1)
        self.down_proj = nn.Parameter(torch.randn(num_experts, intermediate, hidden) * 0.3)
        self.down_proj_bias = nn.Parameter(torch.randn(num_experts, hidden) * 0.1)
        self.alpha = 1.702
        self.limit = 7.0

    def _gate(self, gate_up: torch.Tensor) -> torch.Tensor:
        gate, up = gate_up.chunk(2, dim=-1)
        gate = gate.clamp(min=None, max=self.limit)
        up = up.clamp(min=-self.limit, max=self.limit)
        glu = gate * torch.sigmoid(gate * self.alpha)
        return (up + 1) * glu

    def forward(
        self, hidden_states: torch.Tensor, router_indices: torch.Tensor, routing_weights: torch.Tensor
    ) -> torch.Tensor:
        next_states = torch.zeros_like(hidden_states, dtype=torch.float32)
        with torch.no_grad():
            expert_mask = torch.nn.functional.one_hot(router_indices, num_classes=self.num_experts)
            expert_mask = expert_mask.permute(2, 1, 0)

        for expert_idx in range(expert_mask.shape[0]):
            if expert_idx == self.num_experts:
                continue
            token_idx = torch.arange(expert_mask.shape[-1], device=expert_mask.device)
            routed = expert_mask[expert_idx].any(0)
            current_state = torch.where(routed[:, None], hidden_states[token_idx], 0)
            gate_up = current_state.float() @ self.gate_up_proj[expert_idx].float() + self.gate_up_proj_bias[expert_idx]
            gated = self._gate(gate_up)
            out = gated @ self.down_proj[expert_idx] + self.down_proj_bias[expert_idx].float()
            weighted = out * torch.where(expert_mask[expert_idx].T.bool(), routing_weights, 0).sum(-1, keepdim=True).float()
            next_states.index_add_(0, token_idx, torch.where(routed[:, None], weighted, 0))

        return next_states.to(hidden_states.dtype)


def make():
    """Return (eager_callable, input_sets): top-2 routing over 4 experts, an expert left idle, one token."""
    torch.manual_seed(0)
    hidden = torch.randn(6, 8)
    weights, index = torch.randn(6, 4).softmax(-1).topk(2, dim=-1)
    idle_weights, idle_index = torch.randn(6, 3).softmax(-1).topk(2, dim=-1)  # nobody routed to expert 3
    twice = index.clone()
    twice[:3, 1] = twice[:3, 0]  # one expert listed twice: its contribution counts twice, as in the sparse loop
    return BiasedExperts(), [
        (hidden, index, weights),
        (hidden, idle_index, idle_weights),
        (hidden[:1], index[:1], weights[:1]),
        (hidden, twice, weights),
    ]


compiled = torch.compile(BiasedExperts())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
