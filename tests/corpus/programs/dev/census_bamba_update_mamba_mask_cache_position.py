"""Bamba (transformers 4.48) `_update_mamba_mask`: `if cache_position[0] > 0 or (attention_mask is not None and
torch.all(attention_mask == 1)):` -- two tensor conditions in one `or`.

Source: huggingface/transformers@v4.48.0:src/transformers/models/bamba/modeling_bamba.py (BambaModel._update_mamba_mask
and its call in forward); the same helper (cache_position form) is in GraniteMoeHybrid, Zamba2 and NemotronH of that era.
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): BambaModel eval+train,
`modeling_bamba.py:1164 mamba_mask = self._update_mamba_mask(attention_mask, past_key_values)` (the later
past_key_values form; see census_jamba_update_mamba_mask_all_ones).
Kept: the helper with its docstring and the forward that computes cache_position and applies the mask.
Simplified: the mamba mixer is a Linear.
"""
import torch
from torch import nn


class BambaModel(nn.Module):
    def __init__(self, hidden_size=4):
        super().__init__()
        self.mixer = nn.Linear(hidden_size, hidden_size)

    def forward(self, inputs_embeds, attention_mask=None, cache_position=None, past_seen_tokens=0):
        if cache_position is None:
            cache_position = torch.arange(
                past_seen_tokens, past_seen_tokens + inputs_embeds.shape[1], device=inputs_embeds.device
            )
        mamba_mask = self._update_mamba_mask(attention_mask, cache_position)
        hidden_states = inputs_embeds
        if mamba_mask is not None:
            hidden_states = hidden_states * mamba_mask[:, :, None].to(hidden_states.dtype)
        return self.mixer(hidden_states)

    def _update_mamba_mask(self, attention_mask, cache_position):
        """
        No need for zeroing states when
            1. Cached forward
            2. Attending to all inputs
        """
        mamba_mask = attention_mask
        if cache_position[0] > 0 or (attention_mask is not None and torch.all(attention_mask == 1)):
            mamba_mask = None
        return mamba_mask


model = torch.compile(BambaModel())


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 4, 4)
    return BambaModel(), [
        (x, torch.tensor([[0, 1, 1, 1]])),
        (x, torch.ones(1, 4, dtype=torch.long)),
        (x, torch.tensor([[0, 1, 1, 1]]), None, 3),
    ]
