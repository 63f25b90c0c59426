"""PatchTST random_masking for pretraining: mask ratio ValueError, argsort noise, gather, optional unmasked channels (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/patchtst/modeling_patchtst.py:175-230
Kept: random_masking verbatim (the ratio check, len_keep, channel-consistent
noise repeat, the two argsorts and gather, the per-feature repeat, the
unmasked_channel_indices list assignment, masked_fill and the (inputs, mask) tuple),
called from a PatchTSTMasking-style module.
Simplified: 2 channels, 6 patches of length 3.
"""
import torch
from torch import nn


def random_masking(inputs, mask_ratio: float, unmasked_channel_indices=None, channel_consistent_masking: bool = False, mask_value: int = 0):
    if mask_ratio < 0 or mask_ratio >= 1:
        raise ValueError(f"Mask ratio {mask_ratio} has to be between 0 and 1.")
    batch_size, num_channels, sequence_length, num_features = inputs.shape
    device = inputs.device
    len_keep = int(sequence_length * (1 - mask_ratio))
    if channel_consistent_masking:
        noise = torch.rand(batch_size, 1, sequence_length, device=device)
        noise = noise.repeat(1, num_channels, 1)
    else:
        noise = torch.rand(batch_size, num_channels, sequence_length, device=device)
    mask = torch.ones(batch_size, num_channels, sequence_length, device=device)
    mask[:, :, :len_keep] = 0
    ids_shuffle = torch.argsort(noise, dim=-1)
    ids_restore = torch.argsort(ids_shuffle, dim=-1)
    mask = torch.gather(mask, dim=-1, index=ids_restore)
    mask = mask.unsqueeze(-1).repeat(1, 1, 1, num_features)
    if unmasked_channel_indices is not None:
        mask[:, unmasked_channel_indices, :, :] = 0
    inputs_mask = inputs.masked_fill(mask.bool(), mask_value)
    return inputs_mask, mask[..., 0]


class PatchTSTMasking(nn.Module):
    def __init__(self, random_mask_ratio=0.4, channel_consistent_masking=False, unmasked_channel_indices=None):
        super().__init__()
        self.random_mask_ratio = random_mask_ratio
        self.channel_consistent_masking = channel_consistent_masking
        self.unmasked_channel_indices = unmasked_channel_indices

    def forward(self, patch_input):
        return random_masking(patch_input, mask_ratio=self.random_mask_ratio, unmasked_channel_indices=self.unmasked_channel_indices,
                              channel_consistent_masking=self.channel_consistent_masking)


class TwoMaskings(nn.Module):
    def __init__(self):
        super().__init__()
        self.plain = PatchTSTMasking()
        self.consistent = PatchTSTMasking(channel_consistent_masking=True, unmasked_channel_indices=[1])

    def forward(self, x):
        return self.plain(x), self.consistent(x)


masking = torch.compile(TwoMaskings())


def make():
    torch.manual_seed(0)
    return TwoMaskings(), [(torch.randn(2, 2, 6, 3),)]
