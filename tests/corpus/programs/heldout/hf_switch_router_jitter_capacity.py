"""Switch Transformers top-1 router: training-only jitter, dtype plumbing, capacity mask from cumsum (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/switch_transformers/modeling_switch_transformers.py:72-110
Kept: the router forward (input_dtype attribute, `.to(self.dtype)`, the
`self.training and self.jitter_noise > 0` multiplicative noise, the classifier
re-cast, softmax in router dtype, argmax/one_hot, token priority cumsum and
expert_capacity mask, max router prob), returned as a 3-tuple.
Simplified: hidden 8, 4 experts, capacity 3.
"""
import torch
from torch import nn


class SwitchTransformersTop1Router(nn.Module):
    def __init__(self, hidden=8, num_experts=4, expert_capacity=3, jitter_noise=0.01):
        super().__init__()
        self.num_experts = num_experts
        self.expert_capacity = expert_capacity
        self.classifier = nn.Linear(hidden, num_experts, bias=False)
        self.jitter_noise = jitter_noise
        self.dtype = torch.float32

    def forward(self, hidden_states):
        self.input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(self.dtype)
        if self.training and self.jitter_noise > 0:
            hidden_states *= torch.empty_like(hidden_states).uniform_(1.0 - self.jitter_noise, 1.0 + self.jitter_noise)
        self.classifier = self.classifier.to(self.dtype)
        router_logits = self.classifier(hidden_states)
        router_probs = nn.functional.softmax(router_logits, dim=-1, dtype=self.dtype).to(self.input_dtype)
        expert_index = torch.argmax(router_probs, dim=-1)
        expert_index = torch.nn.functional.one_hot(expert_index, num_classes=self.num_experts)
        token_priority = torch.cumsum(expert_index, dim=-2)
        expert_capacity_mask = token_priority <= self.expert_capacity
        expert_index = expert_index * expert_capacity_mask
        router_probs = torch.max(router_probs, dim=-1).values.unsqueeze(-1)
        return expert_index, router_probs, router_logits


router = SwitchTransformersTop1Router().train()
router = torch.compile(router)


def make():
    torch.manual_seed(0)
    return SwitchTransformersTop1Router().train(), [(torch.randn(2, 5, 8),)]
