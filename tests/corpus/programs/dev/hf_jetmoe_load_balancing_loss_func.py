"""JetMoE causal-LM head: logits_to_keep slice, shifted LM loss, and the router load-balancing aux loss.

Source: huggingface/transformers@00dcc6dda6f6d8e69541a6b51f97986a80242367:src/transformers/models/jetmoe/modeling_jetmoe.py:49-128,1185-1265
Kept: load_balancing_loss_func verbatim (tuple/None early return of int 0, cat over layers, softmax, topk,
one_hot, the attention_mask branch with expand/reshape), JetMoeForCausalLM.forward's tail:
`slice(-logits_to_keep, None) if isinstance(logits_to_keep, int)`, float upcast + shift + flatten,
`if output_router_logits:` aux loss, `loss += self.aux_loss_coef * aux_loss.to(loss.device)`, tuple return.
Simplified: the decoder body is out of scope, so forward takes the final hidden states and the per-layer
router logits directly; self.loss_function is a mean cross-entropy with ignore_index=-100; the original
reads self.num_experts / self.num_experts_per_tok without setting them in __init__, set here from the config.
"""
from typing import Optional, Union

import torch
from torch import nn


class JetMoeConfig:
    hidden_size = 8
    vocab_size = 16
    num_local_experts = 4
    num_experts_per_tok = 2
    aux_loss_coef = 0.01
    output_router_logits = True


def load_balancing_loss_func(
    gate_logits: Union[torch.Tensor, tuple[torch.Tensor], None],
    num_experts: Optional[int] = None,
    top_k=2,
    attention_mask: Optional[torch.Tensor] = None,
) -> Union[torch.Tensor, int]:
    if gate_logits is None or not isinstance(gate_logits, tuple):
        return 0

    if isinstance(gate_logits, tuple):
        compute_device = gate_logits[0].device
        concatenated_gate_logits = torch.cat([layer_gate.to(compute_device) for layer_gate in gate_logits], dim=0)

    routing_weights = torch.nn.functional.softmax(concatenated_gate_logits, dim=-1)

    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)

    expert_mask = torch.nn.functional.one_hot(selected_experts, num_experts)

    if attention_mask is None:
        # Compute the percentage of tokens routed to each experts
        tokens_per_expert = torch.mean(expert_mask.float(), dim=0)

        # Compute the average probability of routing to these experts
        router_prob_per_expert = torch.mean(routing_weights, dim=0)
    else:
        batch_size, sequence_length = attention_mask.shape
        num_hidden_layers = concatenated_gate_logits.shape[0] // (batch_size * sequence_length)

        # Compute the mask that masks all padding tokens as 0 with the same shape of expert_mask
        expert_attention_mask = (
            attention_mask[None, :, :, None, None]
            .expand((num_hidden_layers, batch_size, sequence_length, top_k, num_experts))
            .reshape(-1, top_k, num_experts)
            .to(compute_device)
        )

        # Compute the percentage of tokens routed to each experts
        tokens_per_expert = torch.sum(expert_mask.float() * expert_attention_mask, dim=0) / torch.sum(
            expert_attention_mask, dim=0
        )

        # Compute the mask that masks all padding tokens as 0 with the same shape of tokens_per_expert
        router_per_expert_attention_mask = (
            attention_mask[None, :, :, None]
            .expand((num_hidden_layers, batch_size, sequence_length, num_experts))
            .reshape(-1, num_experts)
            .to(compute_device)
        )

        # Compute the average probability of routing to these experts
        router_prob_per_expert = torch.sum(routing_weights * router_per_expert_attention_mask, dim=0) / torch.sum(
            router_per_expert_attention_mask, dim=0
        )

    overall_loss = torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0))
    return overall_loss * num_experts


def ForCausalLMLoss(logits, labels, vocab_size, ignore_index=-100, **kwargs):
    return nn.functional.cross_entropy(logits, labels, ignore_index=ignore_index, reduction="mean")


class JetMoeCausalLMHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.vocab_size = config.vocab_size
        self.aux_loss_coef = config.aux_loss_coef
        self.num_experts = config.num_local_experts
        self.num_experts_per_tok = config.num_experts_per_tok
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.loss_function = ForCausalLMLoss

    def forward(
        self,
        hidden_states: torch.Tensor,
        router_logits: Optional[tuple] = None,
        attention_mask: Optional[torch.Tensor] = None,
        labels: Optional[torch.LongTensor] = None,
        output_router_logits: Optional[bool] = None,
        logits_to_keep: Union[int, torch.Tensor] = 0,
        **kwargs,
    ):
        output_router_logits = (
            output_router_logits if output_router_logits is not None else self.config.output_router_logits
        )
        # Only compute necessary logits, and do not upcast them to float if we are not computing the loss
        slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
        logits = self.lm_head(hidden_states[:, slice_indices, :])

        loss = None
        if labels is not None:
            # Upcast to float if we need to compute the loss to avoid potential precision issues
            logits = logits.float()
            # Shift so that tokens < n predict n
            shift_logits = logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            # Flatten the tokens
            shift_logits = shift_logits.view(-1, self.config.vocab_size)
            shift_labels = shift_labels.view(-1)
            # Ensure tensors are on the same device
            shift_labels = shift_labels.to(shift_logits.device)
            loss = self.loss_function(
                shift_logits,
                shift_labels,
                vocab_size=self.config.vocab_size,
                **kwargs,
            )

        aux_loss = None
        if output_router_logits:
            aux_loss = load_balancing_loss_func(
                router_logits,
                self.num_experts,
                self.num_experts_per_tok,
                attention_mask,
            )
            if labels is not None:
                loss += self.aux_loss_coef * aux_loss.to(loss.device)  # make sure to reside in the same device

        return tuple(v for v in (loss, aux_loss, logits) if v is not None)


head = torch.compile(JetMoeCausalLMHead(JetMoeConfig()), dynamic=False)


def make():
    torch.manual_seed(0)
    bsz, seq, n_layers = 2, 5, 2
    hidden = torch.randn(bsz, seq, 8)
    router_logits = tuple(torch.randn(bsz * seq, 4) for _ in range(n_layers))
    mask = torch.ones(bsz, seq, dtype=torch.long)
    mask[1, :2] = 0
    labels = torch.randint(0, 16, (bsz, seq))
    labels[1, :2] = -100
    return JetMoeCausalLMHead(JetMoeConfig()), [
        (hidden, router_logits, None, labels),
        (hidden, router_logits, mask, labels),
        (hidden, router_logits, mask, None, False, 1),
    ]
