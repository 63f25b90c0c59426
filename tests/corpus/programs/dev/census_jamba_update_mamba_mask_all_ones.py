"""Jamba drops the mamba mask when `torch.all(attention_mask == 1)`: a tensor condition in an `or` chain.

Source: huggingface/transformers@v5.5 (census version):src/transformers/models/jamba/modeling_jamba.py
(`JambaModel._update_mamba_mask`, the same helper as Bamba/NemotronH/Qwen3-Next `_update_linear_attn_mask`)
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): JambaModel eval+train,
`attention_mask is not None and torch.all(attention_mask == 1)`.
Kept: the helper with its cache check and docstring, called from forward and applied to the mamba input.
Simplified: the cache is a tiny class with `has_previous_state()`; the mixer is a Linear.
"""
import torch
from torch import nn


class TinyCache:
    def __init__(self, seen):
        self.seen = seen

    def has_previous_state(self):
        return self.seen > 0


class JambaModel(nn.Module):
    def __init__(self, hidden_size=8):
        super().__init__()
        self.mixer = nn.Linear(hidden_size, hidden_size)

    def forward(self, inputs_embeds, attention_mask=None, past_key_values=None):
        mamba_mask = self._update_mamba_mask(attention_mask, past_key_values)
        hidden_states = inputs_embeds
        if mamba_mask is not None:
            hidden_states = hidden_states * mamba_mask[:, :, None].to(hidden_states.dtype)
        return self.mixer(hidden_states)

    def _update_mamba_mask(self, attention_mask, past_key_values):
        """
        No need for zeroing states when
            1. Cached forward
            2. Attending to all inputs
        """
        mamba_mask = attention_mask
        if (past_key_values is not None and past_key_values.has_previous_state()) or (
            attention_mask is not None and torch.all(attention_mask == 1)
        ):
            mamba_mask = None
        return mamba_mask


model = torch.compile(JambaModel())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 8)
    padded = torch.tensor([[0, 1, 1, 1, 1], [1, 1, 1, 1, 1]])
    return JambaModel(), [(x, torch.ones(2, 5, dtype=torch.long)), (x, padded), (x, None, TinyCache(0))]
