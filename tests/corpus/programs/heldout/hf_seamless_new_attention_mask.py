"""SeamlessM4T `_compute_new_attention_mask` after the speech encoder's length-reducing adapter (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/seamless_m4t/modeling_seamless_m4t.py:163-187
Kept: _compute_new_attention_mask verbatim (arange expand, the >= seq_lens
comparison, new_ones / masked_fill) and the adapter's use: sub-sampled
lengths from the input mask via floor division of the summed mask.
Simplified: the adapter is a strided conv over hidden 8, stride 2.
"""
import torch
from torch import nn


def _compute_new_attention_mask(hidden_states: torch.Tensor, seq_lens: torch.Tensor):
    batch_size, mask_seq_len = hidden_states.shape[:2]
    indices = torch.arange(mask_seq_len, device=seq_lens.device).expand(batch_size, -1)
    bool_mask = indices >= seq_lens.unsqueeze(1).expand(-1, mask_seq_len)
    mask = hidden_states.new_ones((batch_size, mask_seq_len))
    mask = mask.masked_fill(bool_mask, 0)
    return mask


class SeamlessM4TConformerAdapterLayer(nn.Module):
    def __init__(self, hidden=8, stride=2, kernel_size=2):
        super().__init__()
        self.stride = stride
        self.kernel_size = kernel_size
        self.residual_conv = nn.Conv1d(hidden, hidden, kernel_size, stride=stride)

    def _compute_sub_sample_lengths_from_attention_mask(self, attention_mask):
        pad = self.kernel_size // 2
        seq_lens = attention_mask.size(1) - (1 - attention_mask.int()).sum(1)
        seq_lens = ((seq_lens + 2 * pad - self.kernel_size) / self.stride) + 1
        return seq_lens.floor()

    def forward(self, hidden_states, attention_mask=None):
        hidden_states = self.residual_conv(hidden_states.transpose(1, 2)).transpose(1, 2)
        if attention_mask is not None:
            sub_sampled_lengths = self._compute_sub_sample_lengths_from_attention_mask(attention_mask).to(hidden_states.device)
            attention_mask = _compute_new_attention_mask(hidden_states=hidden_states, seq_lens=sub_sampled_lengths)
            hidden_states = hidden_states * attention_mask[..., None]
        return hidden_states


adapter = torch.compile(SeamlessM4TConformerAdapterLayer())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 8, 8)
    return SeamlessM4TConformerAdapterLayer(), [(x,), (x, torch.tensor([[1] * 8, [1] * 5 + [0] * 3]))]
