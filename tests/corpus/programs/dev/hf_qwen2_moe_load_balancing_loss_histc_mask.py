"""Qwen2-MoE auxiliary load-balancing loss over a tuple of per-layer router logits: histc counts, or scatter_add_ weighted by the attention mask.

Source: huggingface/transformers@v5.23.0:src/transformers/models/qwen2_moe/modeling_qwen2_moe.py:511-581,605-679
Kept: load_balancing_loss_func verbatim (early `return 0`, device-type dtype choice, python
float total_rows accumulating a tensor in the masked branch, histc vs scatter_add_ branches);
the ForCausalLM tail: output_router_logits from config, cross-entropy loss on labels, and
`loss += self.router_aux_loss_coef * aux_loss.to(loss.device)`.
Simplified: the decoder stack is an embedding plus one router gate per layer (the logits it
collects); loss_function is a plain shifted cross-entropy; vocab 11, 4 experts, top-2, 2 layers.
"""
import torch
import torch.nn.functional as F
from torch import nn


class Qwen2MoeConfig:
    vocab_size = 11
    hidden_size = 8
    num_hidden_layers = 2
    num_experts = 4
    num_experts_per_tok = 2
    router_aux_loss_coef = 0.001
    output_router_logits = True


def load_balancing_loss_func(
    gate_logits,
    num_experts=None,
    top_k=2,
    attention_mask=None,
):
    if gate_logits is None or not isinstance(gate_logits, tuple):
        return 0

    # Accumulate assignment counts and probability sums layer by layer, normalizing at the end,
    # so peak memory stays O(seq_len * num_experts) regardless of the number of layers.
    compute_device = gate_logits[0].device
    # Use histc to avoid bincount's device-to-host sync.
    # GPU requires integers for determinism; CPU and MPS require floats for support and determinism.
    histc_dtype = torch.float32 if compute_device.type in ("cpu", "mps") else torch.int32
    tokens_per_expert_sum = torch.zeros(num_experts, dtype=torch.float32, device=compute_device)
    router_prob_sum = torch.zeros(num_experts, dtype=torch.float32, device=compute_device)
    total_rows = 0.0

    if attention_mask is not None:
        # The same flat mask applies to every layer's [batch_size * sequence_length] rows.
        flat_mask = attention_mask.reshape(-1).to(device=compute_device, dtype=torch.float32)

    for layer_gate in gate_logits:
        routing_weights = torch.nn.functional.softmax(layer_gate.to(compute_device), dim=-1)
        _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
        if attention_mask is None:
            # Count top-k assignments with fixed bounds to avoid a device-to-host sync.
            tokens_per_expert_sum = tokens_per_expert_sum + torch.histc(
                selected_experts.reshape(-1).to(histc_dtype), bins=num_experts, min=0, max=num_experts
            )
            # Sum of routing probabilities per expert
            router_prob_sum = router_prob_sum + routing_weights.float().sum(dim=0)
            total_rows = total_rows + routing_weights.shape[0]
        else:
            # Same reductions, weighted by the attention mask to exclude padding tokens
            tokens_per_expert_sum = tokens_per_expert_sum + torch.zeros(
                num_experts, dtype=torch.float32, device=compute_device
            ).scatter_add_(0, selected_experts.reshape(-1), flat_mask.repeat_interleave(top_k))
            router_prob_sum = router_prob_sum + (routing_weights.float() * flat_mask.unsqueeze(-1)).sum(dim=0)
            total_rows = total_rows + flat_mask.sum()

    tokens_per_expert = tokens_per_expert_sum / total_rows
    router_prob_per_expert = router_prob_sum / total_rows

    overall_loss = torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0))
    return overall_loss * num_experts


def ForCausalLMLoss(logits, labels, vocab_size, ignore_index=-100, **kwargs):
    logits = logits.float()
    labels = nn.functional.pad(labels, (0, 1), value=ignore_index)
    shift_labels = labels[..., 1:].contiguous()
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1).to(logits.device)
    return nn.functional.cross_entropy(logits, shift_labels, ignore_index=ignore_index, reduction="mean")


class Qwen2MoeForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.gates = nn.ModuleList(
            [nn.Linear(config.hidden_size, config.num_experts, bias=False) for _ in range(config.num_hidden_layers)]
        )
        self.vocab_size = config.vocab_size
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.router_aux_loss_coef = config.router_aux_loss_coef
        self.num_experts = config.num_experts
        self.num_experts_per_tok = config.num_experts_per_tok
        self.loss_function = ForCausalLMLoss

    def forward(self, input_ids, attention_mask=None, labels=None, output_router_logits=None, **kwargs):
        output_router_logits = (
            output_router_logits if output_router_logits is not None else self.config.output_router_logits
        )
        hidden_states = self.embed_tokens(input_ids)
        all_router_logits = ()
        for gate in self.gates:
            router_logits = gate(hidden_states.reshape(-1, self.config.hidden_size))
            hidden_states = hidden_states + torch.tanh(router_logits.sum(-1)).view_as(hidden_states[..., 0])[..., None]
            all_router_logits += (router_logits,)

        logits = self.lm_head(hidden_states)

        loss = None
        if labels is not None:
            loss = self.loss_function(logits, labels, self.vocab_size, **kwargs)

        aux_loss = None
        if output_router_logits:
            aux_loss = load_balancing_loss_func(
                all_router_logits,
                self.num_experts,
                self.num_experts_per_tok,
                attention_mask,
            )
            if labels is not None:
                loss += self.router_aux_loss_coef * aux_loss.to(loss.device)  # make sure to reside in the same device

        return loss, aux_loss, logits


def train_step(model, batch):
    compiled = torch.compile(model)
    return compiled(**batch)


def make():
    torch.manual_seed(0)
    model = Qwen2MoeForCausalLM(Qwen2MoeConfig()).train()
    ids = torch.randint(0, 11, (2, 5))
    mask = torch.tensor([[1, 1, 1, 1, 1], [0, 0, 1, 1, 1]])
    return model, [(ids, None, ids), (ids, mask, ids), (ids, None, None, False)]
