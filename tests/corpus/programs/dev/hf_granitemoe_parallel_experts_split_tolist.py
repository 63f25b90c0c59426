"""GraniteMoE sparse MoE block: top-k gating with expert_size.tolist(), sorted token grouping, per-expert split + F.linear, index_add back.

Source: huggingface/transformers@v4.52.4:src/transformers/models/granitemoe/modeling_granitemoe.py:223-266,269-314,317-371,128-142
Kept: GraniteMoeParallelExperts (3-D weight, inputs.split(expert_size), loop over
experts with F.linear, cat), GraniteMoeTopKGating (float logits, topk, softmax gates,
scatter of ones, `expert_size = gates.long().sum(0)` then `.tolist()`, sort,
trunc-division batch index, gathered gates), GraniteMoeMoE.forward (gated SiLU on the
chunked expert hidden states, zeros.index_add, router_logits tuple), and the decoder
layer's post-attention RMSNorm + `residual + hidden_states * residual_multiplier`.
Simplified: attention half of the decoder layer omitted (the MoE block is the compiled
unit, wrapped with its norm and scaled residual); the expert weights get the normal
init that _init_weights gives them; hidden 8, 4 experts, top-2.
"""
import torch
import torch.nn.functional as F
from torch import nn


class GraniteMoeConfig:
    hidden_size = 8
    intermediate_size = 16
    num_local_experts = 4
    num_experts_per_tok = 2
    hidden_act = "silu"
    rms_norm_eps = 1e-6
    residual_multiplier = 0.22


class GraniteMoeRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        input_dtype = hidden_states.dtype
        hidden_states = hidden_states.to(torch.float32)
        variance = hidden_states.pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * hidden_states.to(input_dtype)


class GraniteMoeParallelExperts(nn.Module):
    def __init__(self, num_experts: int, input_size: int, output_size: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_experts, output_size, input_size))
        nn.init.normal_(self.weight, std=0.1)
        self.num_experts = num_experts
        self.input_size = input_size
        self.output_size = output_size

    def forward(self, inputs, expert_size):
        input_list = inputs.split(expert_size, dim=0)
        output_list = []
        for i in range(self.num_experts):
            output_list.append(F.linear(input_list[i], self.weight[i]))
        results = torch.cat(output_list, dim=0)
        return results


class GraniteMoeTopKGating(nn.Module):
    def __init__(self, input_size: int, num_experts: int, top_k: int):
        super().__init__()
        self.num_experts = num_experts
        self.input_size = input_size
        self.top_k = top_k
        self.layer = nn.Linear(input_size, num_experts, bias=False)

    def forward(self, hidden_states):
        logits = self.layer(hidden_states).float()
        top_k_logits, top_k_indices = logits.topk(self.top_k, dim=1)
        top_k_gates = torch.softmax(top_k_logits, dim=1).type_as(hidden_states)

        zeros = torch.zeros(
            [top_k_gates.size(0), self.num_experts], dtype=top_k_gates.dtype, device=top_k_gates.device
        )
        gates = zeros.scatter(1, top_k_indices, 1)
        expert_size = gates.long().sum(0)
        expert_size = expert_size.tolist()

        top_k_experts = top_k_indices.flatten()
        _, index_sorted_experts = top_k_experts.sort(0)
        batch_index = index_sorted_experts.div(self.top_k, rounding_mode="trunc")

        top_k_gates = top_k_gates.flatten()
        batch_gates = top_k_gates[index_sorted_experts]

        return index_sorted_experts, batch_index, batch_gates, expert_size, logits


class GraniteMoeMoE(nn.Module):
    def __init__(self, config):
        super(GraniteMoeMoE, self).__init__()
        self.input_size = config.hidden_size
        self.hidden_size = config.intermediate_size
        self.activation = nn.SiLU()
        self.input_linear = GraniteMoeParallelExperts(config.num_local_experts, self.input_size, self.hidden_size * 2)
        self.output_linear = GraniteMoeParallelExperts(config.num_local_experts, self.hidden_size, self.input_size)
        self.router = GraniteMoeTopKGating(
            input_size=self.input_size,
            num_experts=config.num_local_experts,
            top_k=config.num_experts_per_tok,
        )

    def forward(self, layer_input):
        bsz, length, emb_size = layer_input.size()
        layer_input = layer_input.reshape(-1, emb_size)
        _, batch_index, batch_gates, expert_size, router_logits = self.router(layer_input)

        expert_inputs = layer_input[batch_index]
        hidden_states = self.input_linear(expert_inputs, expert_size)
        chunked_hidden_states = hidden_states.chunk(2, dim=-1)
        hidden_states = self.activation(chunked_hidden_states[0]) * chunked_hidden_states[1]
        expert_outputs = self.output_linear(hidden_states, expert_size)

        expert_outputs = expert_outputs * batch_gates[:, None]

        zeros = torch.zeros((bsz * length, self.input_size), dtype=expert_outputs.dtype, device=expert_outputs.device)
        layer_output = zeros.index_add(0, batch_index, expert_outputs)
        layer_output = layer_output.view(bsz, length, self.input_size)
        return layer_output, router_logits


class GraniteMoeFeedForwardHalf(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.block_sparse_moe = GraniteMoeMoE(config)
        self.post_attention_layernorm = GraniteMoeRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.residual_multiplier = config.residual_multiplier

    def forward(self, hidden_states, output_router_logits=False):
        residual = hidden_states
        hidden_states = self.post_attention_layernorm(hidden_states)
        hidden_states, router_logits = self.block_sparse_moe(hidden_states)
        hidden_states = residual + hidden_states * self.residual_multiplier

        outputs = (hidden_states,)
        if output_router_logits:
            outputs += (router_logits,)
        return outputs


ffn = torch.compile(GraniteMoeFeedForwardHalf(GraniteMoeConfig()))


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 8)
    return GraniteMoeFeedForwardHalf(GraniteMoeConfig()), [
        (x,),
        (x, True),
    ]
