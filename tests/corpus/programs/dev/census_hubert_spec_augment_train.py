"""HuBERT SpecAugment: `_compute_mask_indices` draws spans with numpy (`np.random.rand(1).item()`,
`np.random.choice`) inside forward when training.

Source: huggingface/transformers@v5.23.0:src/transformers/models/hubert/modeling_hubert.py:640-823
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): HubertModel train,
`modeling_hubert.py:739 epsilon = np.random.rand(1).item()` and `:777 spec_aug_mask_idx = np.random.choice(`.
Kept: `_compute_mask_indices` (probabilistic rounding, per-row choice, padding with a dummy index,
broadcast offsets, put_along_axis) and `_mask_hidden_states` with its config gates.
Simplified: feature-axis masking and the attention_mask path are dropped; sizes are tiny.
"""
import numpy as np
import torch
from torch import nn


class HubertConfig:
    hidden_size = 8
    apply_spec_augment = True
    mask_time_prob = 0.3
    mask_time_length = 2
    mask_time_min_masks = 1
    mask_feature_prob = 0.0


def _compute_mask_indices(shape, mask_prob, mask_length, attention_mask=None, min_masks=0):
    batch_size, sequence_length = shape

    if mask_length < 1:
        raise ValueError("`mask_length` has to be bigger than 0.")

    # epsilon is used for probabilistic rounding
    epsilon = np.random.rand(1).item()

    def compute_num_masked_span(input_length):
        """Given input length, compute how many spans should be masked"""
        num_masked_span = int(mask_prob * input_length / mask_length + epsilon)
        num_masked_span = max(num_masked_span, min_masks)
        if num_masked_span * mask_length > sequence_length:
            num_masked_span = sequence_length // mask_length
        if input_length - (mask_length - 1) < num_masked_span:
            num_masked_span = max(input_length - (mask_length - 1), 0)
        return num_masked_span

    input_lengths = (
        attention_mask.detach().sum(-1).tolist()
        if attention_mask is not None
        else [sequence_length for _ in range(batch_size)]
    )

    spec_aug_mask = np.zeros((batch_size, sequence_length), dtype=bool)
    spec_aug_mask_idxs = []

    max_num_masked_span = compute_num_masked_span(sequence_length)

    if max_num_masked_span == 0:
        return spec_aug_mask

    for input_length in input_lengths:
        num_masked_span = compute_num_masked_span(input_length)
        spec_aug_mask_idx = np.random.choice(
            np.arange(input_length - (mask_length - 1)), num_masked_span, replace=False
        )
        if len(spec_aug_mask_idx) == 0:
            dummy_mask_idx = sequence_length - 1
        else:
            dummy_mask_idx = spec_aug_mask_idx[0]
        spec_aug_mask_idx = np.concatenate(
            [spec_aug_mask_idx, np.ones(max_num_masked_span - num_masked_span, dtype=np.int32) * dummy_mask_idx]
        )
        spec_aug_mask_idxs.append(spec_aug_mask_idx)

    spec_aug_mask_idxs = np.array(spec_aug_mask_idxs)
    spec_aug_mask_idxs = np.broadcast_to(
        spec_aug_mask_idxs[:, :, None], (batch_size, max_num_masked_span, mask_length)
    )
    spec_aug_mask_idxs = spec_aug_mask_idxs.reshape(batch_size, max_num_masked_span * mask_length)
    offsets = np.arange(mask_length)[None, None, :]
    offsets = np.broadcast_to(offsets, (batch_size, max_num_masked_span, mask_length)).reshape(
        batch_size, max_num_masked_span * mask_length
    )
    spec_aug_mask_idxs = spec_aug_mask_idxs + offsets
    if spec_aug_mask_idxs.max() > sequence_length - 1:
        spec_aug_mask_idxs[spec_aug_mask_idxs > sequence_length - 1] = sequence_length - 1
    np.put_along_axis(spec_aug_mask, spec_aug_mask_idxs, 1, -1)
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
        hidden_states = self._mask_hidden_states(hidden_states, mask_time_indices=mask_time_indices)
        return hidden_states


def train(model, loader):
    model.train()
    step = torch.compile(model)
    for feats in loader:
        step(feats).sum().backward()


def make():
    torch.manual_seed(0)
    np.random.seed(0)
    return HubertModel(HubertConfig()).train(), [(torch.randn(2, 10, 8),)]
