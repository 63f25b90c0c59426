"""Mixtral load_balancing_loss_func: tuple of router logits, optional attention_mask expansion (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/mixtral/modeling_mixtral.py:474-543
Kept: the `gate_logits is None or not isinstance(gate_logits, tuple)` early
return, the device-aware concatenation, topk/one_hot, the attention_mask None
and non-None branches with their expand/reshape plumbing, and the final product.
Simplified: CPU only; 4 experts, 2 layers.
"""
import torch


def load_balancing_loss_func(gate_logits, num_experts=None, top_k=2, attention_mask=None):
    if gate_logits is None or not isinstance(gate_logits, tuple):
        return 0
    if isinstance(gate_logits, tuple):
        compute_device = gate_logits[0].device
        concatenated_gate_logits = torch.cat([layer_gate.to(compute_device) for layer_gate in gate_logits], dim=0)

    routing_weights = torch.nn.functional.softmax(concatenated_gate_logits, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = torch.nn.functional.one_hot(selected_experts, num_experts)

    if attention_mask is None:
        tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
        router_prob_per_expert = torch.mean(routing_weights, dim=0)
    else:
        batch_size, sequence_length = attention_mask.shape
        num_hidden_layers = concatenated_gate_logits.shape[0] // (batch_size * sequence_length)
        expert_attention_mask = (
            attention_mask[None, :, :, None, None]
            .expand((num_hidden_layers, batch_size, sequence_length, top_k, num_experts))
            .reshape(-1, top_k, num_experts)
            .to(compute_device)
        )
        tokens_per_expert = torch.sum(expert_mask.float() * expert_attention_mask, dim=0) / torch.sum(
            expert_attention_mask, dim=0
        )
        router_per_expert_attention_mask = (
            attention_mask[None, :, :, None]
            .expand((num_hidden_layers, batch_size, sequence_length, num_experts))
            .reshape(-1, num_experts)
            .to(compute_device)
        )
        router_prob_per_expert = torch.sum(routing_weights * router_per_expert_attention_mask, dim=0) / torch.sum(
            router_per_expert_attention_mask, dim=0
        )
    overall_loss = torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0))
    return overall_loss * num_experts


@torch.compile
def aux_loss(router_logits, attention_mask):
    return load_balancing_loss_func(router_logits, num_experts=4, top_k=2, attention_mask=attention_mask)


def make():
    torch.manual_seed(0)
    logits = (torch.randn(6, 4), torch.randn(6, 4))
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    return aux_loss._torchdynamo_orig_callable, [(logits, None), (logits, mask)]
