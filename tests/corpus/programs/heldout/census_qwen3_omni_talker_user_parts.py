"""Qwen3-Omni-MoE `_get_talker_user_parts`: `if user_mm_mask.any():` projects the multimodal positions of the
thinker hidden states with a boolean-mask read/write, then the text positions through the complementary mask.

Source: huggingface/transformers@v5.23.0:src/transformers/models/qwen3_omni_moe/modeling_qwen3_omni_moe.py:3974-3995
Census: penguinwu/oss-model-graph-break-corpus sweeps the Qwen3-Omni family (MoE models break in its results).
Kept: the method verbatim (empty buffer, segment slice of the multimodal mask, the `.any()` branch with masked
projection, the text projection with `~mask`).
Simplified: the talker is a holder of two Linear projections; dtype comes from the thinker states.
"""
import torch
from torch import nn


class Talker(nn.Module):
    def __init__(self, thinker_hidden=4, talker_hidden=3):
        super().__init__()
        self.hidden_projection = nn.Linear(thinker_hidden, talker_hidden)
        self.text_projection = nn.Linear(thinker_hidden, talker_hidden)
        self.dtype = torch.float32


class Qwen3OmniMoeForConditionalGeneration(nn.Module):
    def __init__(self, talker_hidden=3):
        super().__init__()
        self.talker = Talker(talker_hidden=talker_hidden)
        self.talker_hidden_size = talker_hidden

    def _get_talker_user_parts(self, im_start_index, segment_end_index, multimodal_mask, thinker_hidden,
                               thinker_embed):
        batch_size = thinker_hidden.shape[0]
        user_talker_part = torch.empty(
            (batch_size, segment_end_index - im_start_index, self.talker_hidden_size),
            device=thinker_hidden.device,
            dtype=self.talker.dtype,
        )

        user_mm_mask = multimodal_mask[:, im_start_index:segment_end_index]

        # Multimodal data exists
        if user_mm_mask.any():
            user_thinker_hidden_mm = thinker_hidden[:, im_start_index:segment_end_index][user_mm_mask]
            mm_hidden = self.talker.hidden_projection(user_thinker_hidden_mm).to(thinker_hidden.device)
            user_talker_part[user_mm_mask] = mm_hidden
        user_thinker_embed = thinker_embed[:, im_start_index:segment_end_index][~user_mm_mask]
        user_text_hidden = self.talker.text_projection(user_thinker_embed).to(thinker_hidden.device)
        user_talker_part[~user_mm_mask] = user_text_hidden
        return user_talker_part

    def forward(self, multimodal_mask, thinker_hidden, thinker_embed, im_start_index=1, segment_end_index=5):
        return self._get_talker_user_parts(
            im_start_index, segment_end_index, multimodal_mask, thinker_hidden, thinker_embed
        )


model = torch.compile(Qwen3OmniMoeForConditionalGeneration())


def make():
    torch.manual_seed(0)
    hidden = torch.randn(1, 6, 4)
    embed = torch.randn(1, 6, 4)
    mm = torch.tensor([[False, True, True, False, False, False]])
    text_only = torch.zeros(1, 6, dtype=torch.bool)
    return Qwen3OmniMoeForConditionalGeneration(), [(mm, hidden, embed), (text_only, hidden, embed)]
