"""Switch Transformers sparse MLP: experts hit via `.nonzero()`, looped, each looked up with `self[f"expert_{expert_idx[0]}"]`.

Source: huggingface/transformers@v5.23.0:src/transformers/models/switch_transformers/modeling_switch_transformers.py:52-114,137-195
Census: penguinwu/oss-model-graph-break-corpus sweep_results/pt2.10 (SwitchTransformersModel eval, modeling_switch_transformers.py:168-170).
Kept: the Top1 router (jitter under self.training, capacity mask via cumsum),
SwitchTransformersExperts as an nn.ModuleDict with its nonzero/where loop and
f-string key, and the SparseMLP reshapes.
Simplified: ReLU dense-act-dense experts, 3 experts of width 8, no dropout.
"""
import torch
from torch import nn


class SwitchTransformersConfig:
    num_experts = 3
    expert_capacity = 4
    hidden_size = 8
    d_model = 8
    d_ff = 16
    router_bias = False
    router_jitter_noise = 0.01
    router_ignore_padding_tokens = False
    router_dtype = "float32"


class SwitchTransformersTop1Router(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_experts = config.num_experts
        self.expert_capacity = config.expert_capacity
        self.classifier = nn.Linear(config.hidden_size, self.num_experts, bias=config.router_bias)
        self.jitter_noise = config.router_jitter_noise
        self.ignore_padding_tokens = config.router_ignore_padding_tokens
        self.dtype = getattr(torch, config.router_dtype)

    def forward(self, hidden_states):
        self.input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(self.dtype)
        if self.training and self.jitter_noise > 0:
            hidden_states *= torch.empty_like(hidden_states).uniform_(1.0 - self.jitter_noise, 1.0 + self.jitter_noise)
        router_logits = self.classifier(hidden_states)

        router_probs = nn.functional.softmax(router_logits, dim=-1, dtype=self.dtype).to(self.input_dtype)
        expert_index = torch.argmax(router_probs, dim=-1)
        expert_index = torch.nn.functional.one_hot(expert_index, num_classes=self.num_experts)
        token_priority = torch.cumsum(expert_index, dim=-2)
        expert_capacity_mask = token_priority <= self.expert_capacity
        expert_index = expert_index * expert_capacity_mask
        router_probs = torch.max(router_probs, dim=-1).values.unsqueeze(-1)
        return expert_index, router_probs, router_logits


class SwitchTransformersDenseActDense(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.wi = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.wo = nn.Linear(config.d_ff, config.d_model, bias=False)
        self.act = nn.ReLU()

    def forward(self, hidden_states):
        hidden_states = self.wi(hidden_states)
        hidden_states = self.act(hidden_states)
        if (
            isinstance(self.wo.weight, torch.Tensor)
            and hidden_states.dtype != self.wo.weight.dtype
            and self.wo.weight.dtype != torch.int8
        ):
            hidden_states = hidden_states.to(self.wo.weight.dtype)
        return self.wo(hidden_states)


class SwitchTransformersExperts(nn.ModuleDict):
    def __init__(self, config):
        super().__init__()
        self.num_experts = config.num_experts
        for idx in range(config.num_experts):
            self[f"expert_{idx}"] = SwitchTransformersDenseActDense(config)

    def forward(self, hidden_states, selected_experts, routing_weights):
        final_hidden_states = torch.zeros_like(hidden_states)
        expert_mask = selected_experts.permute(2, 1, 0)

        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
            current_state = hidden_states[None, top_x].reshape(-1, hidden_states.shape[-1])
            current_hidden_states = self[f"expert_{expert_idx[0]}"](current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        return final_hidden_states


class SwitchTransformersSparseMLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.router = SwitchTransformersTop1Router(config)
        self.experts = SwitchTransformersExperts(config)

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        selected_experts, routing_weights, _ = self.router(hidden_states)
        hidden_states = hidden_states.view(-1, hidden_dim)
        selected_experts = selected_experts.view(-1, 1, self.router.num_experts)
        routing_weights = routing_weights.view(-1, 1)
        hidden_states = self.experts(hidden_states, selected_experts, routing_weights)
        return hidden_states.reshape(batch_size, sequence_length, hidden_dim)


mlp = torch.compile(SwitchTransformersSparseMLP(SwitchTransformersConfig()).eval())


def make():
    torch.manual_seed(0)
    return SwitchTransformersSparseMLP(SwitchTransformersConfig()).eval(), [(torch.randn(2, 5, 8),)]
