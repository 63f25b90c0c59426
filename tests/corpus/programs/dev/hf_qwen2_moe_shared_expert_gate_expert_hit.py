"""Qwen2-MoE sparse block: top-k router, eager experts loop over nonzero expert_hit with torch.where, sigmoid-gated shared expert.

Source: huggingface/transformers@v5.23.0:src/transformers/models/qwen2_moe/modeling_qwen2_moe.py:122-136,268-351
Kept: Qwen2MoeMLP, Qwen2MoeExperts.forward verbatim (one_hot under no_grad, expert_hit nonzero,
`for expert_idx in expert_hit`, `if expert_idx == self.num_experts: continue`, torch.where,
index_add_), Qwen2MoeTopKRouter with norm_topk_prob in-place divide, Qwen2MoeSparseMoeBlock,
the use_experts_implementation wrapper dispatching on config._experts_implementation.
Simplified: the model is loaded with experts_implementation="eager" (the modeling file's own
loop; the library default is grouped_mm where available); 4 experts, top-2, hidden 8.
"""
from collections import OrderedDict
from functools import wraps

import torch
import torch.nn.functional as F
from torch import nn


class ClassInstantier(OrderedDict):
    def __getitem__(self, key):
        content = super().__getitem__(key)
        cls, kwargs = content if isinstance(content, tuple) else (content, {})
        return cls(**kwargs)


ACT2FN = ClassInstantier({"silu": nn.SiLU, "gelu": nn.GELU})


class Qwen2MoeConfig:
    hidden_size = 8
    intermediate_size = 16
    moe_intermediate_size = 8
    shared_expert_intermediate_size = 16
    num_experts = 4
    num_experts_per_tok = 2
    norm_topk_prob = False
    hidden_act = "silu"
    _experts_implementation = "eager"


class ExpertsInterface:
    _global_mapping = {}

    def get_interface(self, experts_implementation, default):
        if experts_implementation == "eager" or experts_implementation is None:
            return default
        return self._global_mapping[experts_implementation]


experts_interface = ExpertsInterface()


def use_experts_implementation(experts_class):
    original_init = experts_class.__init__
    original_forward = experts_class.forward

    @wraps(original_init)
    def __init__(self, config, *args, **kwargs):
        original_init(self, config, *args, **kwargs)
        self.config = config
        self.has_gate = True
        self.has_bias = False
        self._is_expert_parallel = False

    @wraps(original_forward)
    def forward(self, *args, **kwargs):
        experts_forward = experts_interface.get_interface(self.config._experts_implementation, original_forward)
        return experts_forward(self, *args, **kwargs)

    experts_class.__init__ = __init__
    experts_class.forward = forward
    return experts_class


class Qwen2MoeMLP(nn.Module):
    def __init__(self, config, intermediate_size=None):
        super().__init__()
        self.config = config
        self.hidden_size = config.hidden_size
        self.intermediate_size = config.intermediate_size if intermediate_size is None else intermediate_size
        self.gate_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=False)
        self.up_proj = nn.Linear(self.hidden_size, self.intermediate_size, bias=False)
        self.down_proj = nn.Linear(self.intermediate_size, self.hidden_size, bias=False)
        self.act_fn = ACT2FN[config.hidden_act]

    def forward(self, x):
        down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
        return down_proj


@use_experts_implementation
class Qwen2MoeExperts(nn.Module):
    """Collection of expert weights stored as 3D tensors."""

    def __init__(self, config):
        super().__init__()
        self.num_experts = config.num_experts
        self.hidden_dim = config.hidden_size
        self.intermediate_dim = config.moe_intermediate_size
        self.gate_up_proj = nn.Parameter(torch.randn(self.num_experts, 2 * self.intermediate_dim, self.hidden_dim) * 0.1)
        self.down_proj = nn.Parameter(torch.randn(self.num_experts, self.hidden_dim, self.intermediate_dim) * 0.1)
        self.act_fn = ACT2FN[config.hidden_act]

    def forward(
        self,
        hidden_states: torch.Tensor,
        top_k_index: torch.Tensor,
        top_k_weights: torch.Tensor,
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


class Qwen2MoeTopKRouter(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.top_k = config.num_experts_per_tok
        self.num_experts = config.num_experts
        self.norm_topk_prob = config.norm_topk_prob
        self.hidden_dim = config.hidden_size
        self.weight = nn.Parameter(torch.randn(self.num_experts, self.hidden_dim) * 0.5)

    def forward(self, hidden_states):
        hidden_states = hidden_states.reshape(-1, self.hidden_dim)
        router_logits = F.linear(hidden_states, self.weight)  # (seq_len, num_experts)
        router_probs = torch.nn.functional.softmax(router_logits, dtype=torch.float, dim=-1)
        router_top_value, router_indices = torch.topk(router_probs, self.top_k, dim=-1)  # (seq_len, top_k)
        if self.norm_topk_prob:
            router_top_value /= router_top_value.sum(dim=-1, keepdim=True)
        router_top_value = router_top_value.to(router_logits.dtype)
        router_scores = router_top_value
        return router_logits, router_scores, router_indices


class Qwen2MoeSparseMoeBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.gate = Qwen2MoeTopKRouter(config)
        self.experts = Qwen2MoeExperts(config)
        self.shared_expert = Qwen2MoeMLP(config, intermediate_size=config.shared_expert_intermediate_size)
        self.shared_expert_gate = torch.nn.Linear(config.hidden_size, 1, bias=False)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states_reshaped = hidden_states.view(-1, hidden_dim)
        shared_expert_output = self.shared_expert(hidden_states_reshaped)
        _, routing_weights, selected_experts = self.gate(hidden_states_reshaped)
        expert_output = self.experts(hidden_states_reshaped, selected_experts, routing_weights)

        shared_expert_output = F.sigmoid(self.shared_expert_gate(hidden_states_reshaped)) * shared_expert_output

        expert_output = expert_output + shared_expert_output
        expert_output = expert_output.reshape(batch_size, sequence_length, hidden_dim)
        return expert_output


def build_block():
    block = Qwen2MoeSparseMoeBlock(Qwen2MoeConfig())
    return torch.compile(block)


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 8)
    return Qwen2MoeSparseMoeBlock(Qwen2MoeConfig()), [(x,), (x[:1, :1],)]
