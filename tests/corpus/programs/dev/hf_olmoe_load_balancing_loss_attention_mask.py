"""OLMoE causal-LM head: cross-entropy loss plus the Switch-style load-balancing aux loss with an optional padding mask.

Source: huggingface/transformers@v4.52.4:src/transformers/models/olmoe/modeling_olmoe.py:43-122,1009-1144
Kept: load_balancing_loss_func unchanged (tuple check, torch.cat over layers,
softmax/topk/one_hot, the `attention_mask is None` branch and the padded branch
with expand/reshape and the num_hidden_layers integer division);
OlmoeForCausalLM.forward's config-default plumbing, logits_to_keep slicing,
`if output_router_logits:` aux loss, `loss += router_aux_loss_coef * aux_loss`,
and the tuple (return_dict=False) output assembly.
Simplified: the decoder stack is a stand-in (embedding + one router gate per
layer, a tanh mixing step) that returns (hidden_states, router_logits tuple);
self.loss_function is the shifted cross entropy of ForCausalLMLoss.
"""
import torch
from torch import nn


class OlmoeConfig:
    vocab_size = 16
    hidden_size = 8
    num_hidden_layers = 2
    num_experts = 4
    num_experts_per_tok = 2
    router_aux_loss_coef = 0.01
    output_attentions = False
    output_hidden_states = False
    output_router_logits = False
    use_return_dict = False


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


def ForCausalLMLoss(logits, labels, vocab_size, ignore_index=-100, **kwargs):
    logits = logits.float()
    labels = nn.functional.pad(labels, (0, 1), value=ignore_index)
    shift_labels = labels[..., 1:].contiguous()
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1).to(logits.device)
    return nn.functional.cross_entropy(logits, shift_labels, ignore_index=ignore_index, reduction="mean")


class OlmoeModelStandIn(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.gates = nn.ModuleList(
            [nn.Linear(config.hidden_size, config.num_experts, bias=False) for _ in range(config.num_hidden_layers)]
        )

    def forward(self, input_ids=None, attention_mask=None, output_router_logits=False, return_dict=False):
        hidden_states = self.embed_tokens(input_ids)
        all_router_logits = () if output_router_logits else None
        for gate in self.gates:
            router_logits = gate(hidden_states.view(-1, hidden_states.shape[-1]))
            hidden_states = torch.tanh(hidden_states + router_logits.mean(-1).view_as(hidden_states[..., 0]).unsqueeze(-1))
            if output_router_logits:
                all_router_logits += (router_logits,)
        return tuple(v for v in [hidden_states, all_router_logits] if v is not None)


class OlmoeForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = OlmoeModelStandIn(config)
        self.vocab_size = config.vocab_size
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.router_aux_loss_coef = config.router_aux_loss_coef
        self.num_experts = config.num_experts
        self.num_experts_per_tok = config.num_experts_per_tok
        self.loss_function = ForCausalLMLoss

    def forward(self, input_ids=None, attention_mask=None, labels=None, output_router_logits=None,
                return_dict=None, logits_to_keep=0, **loss_kwargs):
        output_router_logits = (
            output_router_logits if output_router_logits is not None else self.config.output_router_logits
        )
        return_dict = return_dict if return_dict is not None else self.config.use_return_dict

        outputs = self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            output_router_logits=output_router_logits,
            return_dict=return_dict,
        )

        hidden_states = outputs[0]
        slice_indices = slice(-logits_to_keep, None) if isinstance(logits_to_keep, int) else logits_to_keep
        logits = self.lm_head(hidden_states[:, slice_indices, :])

        loss = None
        if labels is not None:
            loss = self.loss_function(logits, labels, self.vocab_size, **loss_kwargs)

        aux_loss = None
        if output_router_logits:
            aux_loss = load_balancing_loss_func(
                outputs[-1],
                self.num_experts,
                self.num_experts_per_tok,
                attention_mask,
            )
            if labels is not None:
                loss += self.router_aux_loss_coef * aux_loss.to(loss.device)

        output = (logits,) + outputs[1:]
        if output_router_logits:
            output = (aux_loss,) + output
        return (loss,) + output if loss is not None else output


def train_step_model(config):
    model = OlmoeForCausalLM(config)
    return torch.compile(model)


def make():
    torch.manual_seed(0)
    ids = torch.randint(0, 16, (2, 6))
    mask = torch.ones(2, 6, dtype=torch.long)
    mask[1, :2] = 0
    return OlmoeForCausalLM(OlmoeConfig()), [
        (ids, None, ids, True),
        (ids, mask, ids, True),
        (ids, mask, None, None),
    ]
