"""ERNIE-4.5-VL MoE block: `if moe_mm_token_type_ids is not None and moe_mm_token_type_ids.any():` routes text and
vision tokens through separate MoEs with boolean-mask reads and writes.

Source: huggingface/transformers@v5.23.0:src/transformers/models/ernie4_5_vl_moe/modeling_ernie4_5_vl_moe.py:430-476
(Ernie4_5_VLMoeMoeBlock.forward)
Census: penguinwu/oss-model-graph-break-corpus sweeps the ERNIE-4.5 family; the multimodal MoE block is where the
token-type mask enters.
Kept: the shared experts, the `.any()` gate, the router-logit buffer, the bool token-type masks and both masked
read/write pairs, the text-only else branch with reshapes.
Simplified: each modality MoE is a Linear returning (states, router logits); the masked 1-d reads are viewed as
(tokens, hidden) before it and flattened back for the masked writes (the real MoEs reshape internally).
"""
import torch
from torch import nn


class TinyMoe(nn.Module):
    def __init__(self, hidden, num_experts):
        super().__init__()
        self.proj = nn.Linear(hidden, hidden)
        self.gate = nn.Linear(hidden, num_experts)

    def forward(self, hidden_states):
        return self.proj(hidden_states), self.gate(hidden_states).float()


class Ernie4_5_VLMoeMoeBlock(nn.Module):
    def __init__(self, hidden=4, num_experts=3):
        super().__init__()
        self.num_experts = num_experts
        self.shared_experts = nn.Linear(hidden, hidden)
        self.text_moe = TinyMoe(hidden, num_experts)
        self.vision_moe = TinyMoe(hidden, num_experts)

    def forward(self, hidden_states, moe_mm_token_type_ids=None):
        batch_size, sequence_length, hidden_dim = hidden_states.shape

        # (Optional) shared experts
        if self.shared_experts is not None:
            shared_output = self.shared_experts(hidden_states)

        if moe_mm_token_type_ids is not None and moe_mm_token_type_ids.any():
            final_hidden_states = torch.zeros_like(hidden_states)
            router_logits = torch.zeros(
                size=(batch_size * sequence_length, self.num_experts),
                device=final_hidden_states.device,
                dtype=torch.float,
            )

            # True (1 or 2) == vision, False (0) == text tokens
            moe_mm_token_type_ids = moe_mm_token_type_ids.bool()
            token_type_ids_router = moe_mm_token_type_ids.reshape(-1)[:, None].expand(-1, self.num_experts)
            token_type_ids_states = moe_mm_token_type_ids[..., None].expand(-1, -1, hidden_dim)

            # Run moe on each modality and assign their results to the original token positions
            text_states, text_logits = self.text_moe(hidden_states[~token_type_ids_states].view(-1, hidden_dim))
            final_hidden_states[~token_type_ids_states], router_logits[~token_type_ids_router] = (
                text_states.reshape(-1), text_logits.reshape(-1)
            )
            vision_states, vision_logits = self.vision_moe(hidden_states[token_type_ids_states].view(-1, hidden_dim))
            final_hidden_states[token_type_ids_states], router_logits[token_type_ids_router] = (
                vision_states.reshape(-1), vision_logits.reshape(-1)
            )
        else:
            final_hidden_states, router_logits = self.text_moe(hidden_states)
            final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
            router_logits = router_logits.reshape(-1, self.num_experts)

        # Add (optional) shared experts to the result
        if self.shared_experts is not None:
            final_hidden_states = final_hidden_states + shared_output

        return final_hidden_states, router_logits


moe = torch.compile(Ernie4_5_VLMoeMoeBlock())


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 4, 4)
    return Ernie4_5_VLMoeMoeBlock(), [
        (x,),
        (x, torch.zeros(1, 4, dtype=torch.long)),
        (x, torch.tensor([[0, 1, 1, 0]])),
    ]
