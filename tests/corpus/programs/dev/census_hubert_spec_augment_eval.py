"""HuBERT SpecAugment in eval mode: `_mask_hidden_states` returns before any numpy sampling (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/hubert/modeling_hubert.py:779-823
Census: penguinwu/oss-model-graph-break-corpus: HubertModel's numpy SpecAugment breaks are train-only.
Kept: `_mask_hidden_states` with its `apply_spec_augment`, `mask_time_indices is not None` and
`mask_time_prob > 0 and self.training` gates; the numpy sampler exists but is not reached.
Simplified: the sampler is shortened to the part that matters (it is never called in eval).
"""
import numpy as np
import torch
from torch import nn


class HubertConfig:
    hidden_size = 8
    apply_spec_augment = True
    mask_time_prob = 0.05
    mask_time_length = 2
    mask_time_min_masks = 2
    mask_feature_prob = 0.0


def _compute_mask_indices(shape, mask_prob, mask_length, attention_mask=None, min_masks=0):
    batch_size, sequence_length = shape
    epsilon = np.random.rand(1).item()
    num_masked_span = max(int(mask_prob * sequence_length / mask_length + epsilon), min_masks)
    spec_aug_mask = np.zeros((batch_size, sequence_length), dtype=bool)
    for b in range(batch_size):
        idx = np.random.choice(np.arange(sequence_length - (mask_length - 1)), num_masked_span, replace=False)
        for i in idx:
            spec_aug_mask[b, i:i + mask_length] = True
    return spec_aug_mask


class HubertModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.masked_spec_embed = nn.Parameter(torch.rand(config.hidden_size))
        self.proj = nn.Linear(config.hidden_size, config.hidden_size)

    def _mask_hidden_states(self, hidden_states, mask_time_indices=None, attention_mask=None):
        if not getattr(self.config, "apply_spec_augment", True):
            return hidden_states
        batch_size, sequence_length, hidden_size = hidden_states.size()
        if mask_time_indices is not None:
            hidden_states[mask_time_indices] = self.masked_spec_embed.to(hidden_states.dtype)
        elif self.config.mask_time_prob > 0 and self.training:
            mask_time_indices = _compute_mask_indices(
                (batch_size, sequence_length),
                mask_prob=self.config.mask_time_prob,
                mask_length=self.config.mask_time_length,
                attention_mask=attention_mask,
                min_masks=self.config.mask_time_min_masks,
            )
            mask_time_indices = torch.tensor(mask_time_indices, device=hidden_states.device, dtype=torch.bool)
            hidden_states[mask_time_indices] = self.masked_spec_embed.to(hidden_states.dtype)
        return hidden_states

    def forward(self, extract_features, mask_time_indices=None):
        hidden_states = self.proj(extract_features)
        return self._mask_hidden_states(hidden_states, mask_time_indices=mask_time_indices)


model = HubertModel(HubertConfig())
model.eval()
opt_model = torch.compile(model, mode="reduce-overhead")


def make():
    torch.manual_seed(0)
    return HubertModel(HubertConfig()).eval(), [(torch.randn(2, 10, 8),)]
