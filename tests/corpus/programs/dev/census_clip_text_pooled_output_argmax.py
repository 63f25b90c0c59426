"""CLIP text transformer pooling: `last_hidden_state[torch.arange(b), ids.argmax(dim=-1)]`, with the legacy
`eos_token_id == 2` config branch (advanced indexing with 1-d index tensors; no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/clip/modeling_clip.py:540-575
Census: penguinwu/oss-model-graph-break-corpus identify_results (2026-04-19): CLIPTextModel is full_graph.
Kept: the final layer norm and both pooling branches verbatim, chosen by `self.eos_token_id`.
Simplified: the encoder is one Linear over token embeddings.
"""
import torch
from torch import nn


class CLIPTextTransformer(nn.Module):
    def __init__(self, eos_token_id=2, vocab=10, width=4):
        super().__init__()
        self.eos_token_id = eos_token_id
        self.embeddings = nn.Embedding(vocab, width)
        self.encoder = nn.Linear(width, width)
        self.final_layer_norm = nn.LayerNorm(width)

    def forward(self, input_ids):
        last_hidden_state = self.encoder(self.embeddings(input_ids))
        last_hidden_state = self.final_layer_norm(last_hidden_state)

        if self.eos_token_id == 2:
            # The `eos_token_id` was incorrect before PR #24773: Let's keep what have been done here.
            pooled_output = last_hidden_state[
                torch.arange(last_hidden_state.shape[0], device=last_hidden_state.device),
                input_ids.to(dtype=torch.int, device=last_hidden_state.device).argmax(dim=-1),
            ]
        else:
            # The config gets updated `eos_token_id` from PR #24773 (so the use of extra new tokens is possible)
            pooled_output = last_hidden_state[
                torch.arange(last_hidden_state.shape[0], device=last_hidden_state.device),
                # We need to get the first position of `eos_token_id` value (`pad_token_ids` might equal to `eos_token_id`)
                (input_ids.to(dtype=torch.int, device=last_hidden_state.device) == self.eos_token_id)
                .int()
                .argmax(dim=-1),
            ]
        return last_hidden_state, pooled_output


text_model = torch.compile(CLIPTextTransformer(eos_token_id=9))


def make():
    torch.manual_seed(0)
    return CLIPTextTransformer(eos_token_id=9), [(torch.tensor([[1, 4, 9, 0], [1, 9, 0, 0]]),)]
