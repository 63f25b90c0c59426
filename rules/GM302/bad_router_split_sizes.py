"""GM302 bad: jetmoe's router returns `.tolist()` expert sizes; the experts module splits its tokens by them.

The list crosses two calls (returned by the router, passed to each experts module) and is only ever
`split` sizes, which `capture_scalar_outputs` traces as unbacked symbols: the switch is the fix (unsafe).
Source: huggingface/transformers@v5.23.0:src/transformers/models/jetmoe/modeling_jetmoe.py:138-248
"""
import torch
import torch.nn.functional as F
from torch import nn


class ParallelExperts(nn.Module):
    def __init__(self, num_experts: int, input_size: int, output_size: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_experts, output_size, input_size) / input_size**0.5)
        self.num_experts = num_experts

    def forward(self, inputs, expert_size):
        input_list = inputs.split(expert_size, dim=0)
        output_list = []
        for i in range(self.num_experts):
            output_list.append(F.linear(input_list[i], self.weight[i]))
        return torch.cat(output_list, dim=0)


class TopKGating(nn.Module):
    def __init__(self, input_size: int, num_experts: int, top_k: int) -> None:
        super().__init__()
        self.num_experts = num_experts
        self.top_k = top_k
        self.layer = nn.Linear(input_size, num_experts, bias=False)

    def forward(self, hidden_states):
        logits = self.layer(hidden_states).float()
        top_k_logits, top_k_indices = logits.topk(self.top_k, dim=1)
        top_k_gates = torch.softmax(top_k_logits, dim=1).type_as(hidden_states)
        zeros = torch.zeros([top_k_gates.size(0), self.num_experts], dtype=top_k_gates.dtype)
        gates = zeros.scatter(1, top_k_indices, 1)
        expert_size = gates.long().sum(0)
        expert_size = expert_size.tolist()
        _, index_sorted_experts = top_k_indices.flatten().sort(0)
        batch_index = index_sorted_experts.div(self.top_k, rounding_mode="trunc")
        batch_gates = top_k_gates.flatten()[index_sorted_experts]
        return batch_index, batch_gates, expert_size


class MoE(nn.Module):
    def __init__(self, hidden: int = 8, inner: int = 6, num_experts: int = 4, top_k: int = 2) -> None:
        super().__init__()
        self.hidden = hidden
        self.input_linear = ParallelExperts(num_experts, hidden, inner)
        self.output_linear = ParallelExperts(num_experts, inner, hidden)
        self.router = TopKGating(hidden, num_experts, top_k)

    def forward(self, layer_input: torch.Tensor) -> torch.Tensor:
        bsz, length, emb_size = layer_input.size()
        layer_input = layer_input.reshape(-1, emb_size)
        batch_index, batch_gates, expert_size = self.router(layer_input)
        hidden_states = torch.relu(self.input_linear(layer_input[batch_index], expert_size))
        expert_outputs = self.output_linear(hidden_states, expert_size) * batch_gates[:, None]
        zeros = torch.zeros((bsz * length, self.hidden), dtype=expert_outputs.dtype)
        return zeros.index_add(0, batch_index, expert_outputs).view(bsz, length, self.hidden)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return MoE(), [(torch.randn(2, 5, 8),), (torch.randn(1, 3, 8),)]


compiled = torch.compile(MoE())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
