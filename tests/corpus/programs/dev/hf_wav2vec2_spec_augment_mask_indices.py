"""Wav2Vec2 `_mask_hidden_states` in training: `_compute_mask_indices` builds SpecAugment spans with numpy random calls.

Source: huggingface/transformers@v5.23.0:src/transformers/models/wav2vec2/modeling_wav2vec2.py:105-221,1225-1269
Kept: _compute_mask_indices (length checks, np.random.rand(1).item() epsilon,
the nested compute_num_masked_span, attention_mask lengths via tolist,
np.random.choice per example, padding with dummy indices, broadcast offsets,
np.put_along_axis), and _mask_hidden_states (apply_spec_augment getattr,
given-indices path, time and feature masking gated on self.training).
Simplified: hidden 8, sequence 12, mask_time_length 2, feature masking off.
"""
import numpy as np
import torch
from torch import nn


def _compute_mask_indices(shape, mask_prob, mask_length, attention_mask=None, min_masks=0):
    batch_size, sequence_length = shape
    if mask_length < 1:
        raise ValueError("`mask_length` has to be bigger than 0.")
    if mask_length > sequence_length:
        raise ValueError(
            f"`mask_length` has to be smaller than `sequence_length`, but got `mask_length`: {mask_length}"
            f" and `sequence_length`: {sequence_length}`"
        )
    epsilon = np.random.rand(1).item()

    def compute_num_masked_span(input_length):
        num_masked_span = int(mask_prob * input_length / mask_length + epsilon)
        num_masked_span = max(num_masked_span, min_masks)
        if num_masked_span * mask_length > sequence_length:
            num_masked_span = sequence_length // mask_length
        if input_length - (mask_length - 1) < num_masked_span:
            num_masked_span = max(input_length - (mask_length - 1), 0)
        return num_masked_span

    input_lengths = (
        attention_mask.detach().sum(-1).tolist() if attention_mask is not None else [sequence_length for _ in range(batch_size)]
    )
    spec_aug_mask = np.zeros((batch_size, sequence_length), dtype=bool)
    spec_aug_mask_idxs = []
    max_num_masked_span = compute_num_masked_span(sequence_length)
    if max_num_masked_span == 0:
        return spec_aug_mask
    for input_length in input_lengths:
        num_masked_span = compute_num_masked_span(input_length)
        spec_aug_mask_idx = np.random.choice(np.arange(input_length - (mask_length - 1)), num_masked_span, replace=False)
        if len(spec_aug_mask_idx) == 0:
            dummy_mask_idx = sequence_length - 1
        else:
            dummy_mask_idx = spec_aug_mask_idx[0]
        spec_aug_mask_idx = np.concatenate([spec_aug_mask_idx, np.ones(max_num_masked_span - num_masked_span, dtype=np.int32) * dummy_mask_idx])
        spec_aug_mask_idxs.append(spec_aug_mask_idx)
    spec_aug_mask_idxs = np.array(spec_aug_mask_idxs)
    spec_aug_mask_idxs = np.broadcast_to(spec_aug_mask_idxs[:, :, None], (batch_size, max_num_masked_span, mask_length))
    spec_aug_mask_idxs = spec_aug_mask_idxs.reshape(batch_size, max_num_masked_span * mask_length)
    offsets = np.arange(mask_length)[None, None, :]
    offsets = np.broadcast_to(offsets, (batch_size, max_num_masked_span, mask_length)).reshape(batch_size, max_num_masked_span * mask_length)
    spec_aug_mask_idxs = spec_aug_mask_idxs + offsets
    if spec_aug_mask_idxs.max() > sequence_length - 1:
        spec_aug_mask_idxs[spec_aug_mask_idxs > sequence_length - 1] = sequence_length - 1
    np.put_along_axis(spec_aug_mask, spec_aug_mask_idxs, 1, -1)
    return spec_aug_mask


class Wav2Vec2Config:
    apply_spec_augment = True
    mask_time_prob = 0.3
    mask_time_length = 2
    mask_time_min_masks = 1
    mask_feature_prob = 0.0


class Wav2Vec2Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.masked_spec_embed = nn.Parameter(torch.rand(8))
        self.encoder = nn.Linear(8, 8)

    def _mask_hidden_states(self, hidden_states, mask_time_indices=None, attention_mask=None):
        if not getattr(self.config, "apply_spec_augment", True):
            return hidden_states
        batch_size, sequence_length, hidden_size = hidden_states.size()
        if mask_time_indices is not None:
            hidden_states[mask_time_indices] = self.masked_spec_embed.to(hidden_states.dtype)
        elif self.config.mask_time_prob > 0 and self.training:
            mask_time_indices = _compute_mask_indices(
                (batch_size, sequence_length), mask_prob=self.config.mask_time_prob, mask_length=self.config.mask_time_length,
                attention_mask=attention_mask, min_masks=self.config.mask_time_min_masks,
            )
            mask_time_indices = torch.tensor(mask_time_indices, device=hidden_states.device, dtype=torch.bool)
            hidden_states[mask_time_indices] = self.masked_spec_embed.to(hidden_states.dtype)
        return hidden_states

    def forward(self, extract_features, attention_mask=None):
        hidden_states = self._mask_hidden_states(extract_features.clone(), attention_mask=attention_mask)
        return self.encoder(hidden_states)


def make():
    torch.manual_seed(0)
    feats = torch.randn(2, 12, 8)
    return Wav2Vec2Model(Wav2Vec2Config()).train(), [(feats,), (feats, torch.tensor([[1] * 12, [1] * 8 + [0] * 4]))]


def pretrain():
    model = Wav2Vec2Model(Wav2Vec2Config()).train()
    return torch.compile(model)
