"""FastSpeech2-Conformer loss: `masked_select` on every output/label with the padding masks (computed in the
training forward when labels are given).

Source: huggingface/transformers@v5.23.0:src/transformers/models/fastspeech2_conformer/modeling_fastspeech2_conformer.py:885-977
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): FastSpeech2ConformerModel train,
lines 947-956 `... .masked_select(...)` (dynamic shape operator).
Kept: FastSpeech2ConformerLoss.forward: the use_masking block, the L1/duration/MSE criteria, the log-domain
duration labels, and the weighted-masking block.
Simplified: no postnet-free path; masks are given; the model computing the outputs is left out.
"""
import torch
from torch import nn


class FastSpeech2ConformerLoss(nn.Module):
    def __init__(self, use_masking=True, use_weighted_masking=False):
        super().__init__()
        self.use_masking = use_masking
        self.use_weighted_masking = use_weighted_masking
        reduction = "none" if self.use_weighted_masking else "mean"
        self.l1_criterion = nn.L1Loss(reduction=reduction)
        self.mse_criterion = nn.MSELoss(reduction=reduction)
        self.duration_criterion = nn.MSELoss(reduction=reduction)
        self.log_domain_offset = 1.0

    def forward(self, outputs_after_postnet, outputs_before_postnet, duration_outputs, pitch_outputs,
                energy_outputs, spectrogram_labels, duration_labels, pitch_labels, energy_labels,
                duration_mask, spectrogram_mask):
        pitch_and_energy_masks = duration_mask.unsqueeze(-1)

        # apply mask to remove padded part
        if self.use_masking:
            outputs_before_postnet = outputs_before_postnet.masked_select(spectrogram_mask)
            if outputs_after_postnet is not None:
                outputs_after_postnet = outputs_after_postnet.masked_select(spectrogram_mask)
            spectrogram_labels = spectrogram_labels.masked_select(spectrogram_mask)
            duration_outputs = duration_outputs.masked_select(duration_mask)
            duration_labels = duration_labels.masked_select(duration_mask)
            pitch_outputs = pitch_outputs.masked_select(pitch_and_energy_masks)
            energy_outputs = energy_outputs.masked_select(pitch_and_energy_masks)
            pitch_labels = pitch_labels.masked_select(pitch_and_energy_masks)
            energy_labels = energy_labels.masked_select(pitch_and_energy_masks)

        # calculate loss
        l1_loss = self.l1_criterion(outputs_before_postnet, spectrogram_labels)
        if outputs_after_postnet is not None:
            l1_loss = l1_loss + self.l1_criterion(outputs_after_postnet, spectrogram_labels)
        duration_labels = torch.log(duration_labels.float() + self.log_domain_offset)
        duration_loss = self.duration_criterion(duration_outputs, duration_labels)
        pitch_loss = self.mse_criterion(pitch_outputs, pitch_labels)
        energy_loss = self.mse_criterion(energy_outputs, energy_labels)

        # make weighted mask and apply it
        if self.use_weighted_masking:
            out_weights = spectrogram_mask.float() / spectrogram_mask.sum(dim=1, keepdim=True).float()
            out_weights /= spectrogram_labels.size(0) * spectrogram_labels.size(2)
            duration_weights = duration_mask.float() / duration_mask.sum(dim=1, keepdim=True).float()
            duration_weights /= duration_labels.size(0)
            l1_loss = l1_loss.mul(out_weights).masked_select(spectrogram_mask).sum()
            duration_loss = duration_loss.mul(duration_weights).masked_select(duration_mask).sum()
            pitch_weights = duration_weights.unsqueeze(-1)
            pitch_loss = pitch_loss.mul(pitch_weights).masked_select(pitch_and_energy_masks).sum()
            energy_loss = energy_loss.mul(pitch_weights).masked_select(pitch_and_energy_masks).sum()

        return l1_loss + duration_loss + pitch_loss + energy_loss


criterion = torch.compile(FastSpeech2ConformerLoss())


def make():
    torch.manual_seed(0)
    B, T, L, M = 2, 6, 3, 2
    spec_mask = torch.ones(B, T, 1, dtype=torch.bool)
    spec_mask[1, 4:] = False
    dur_mask = torch.ones(B, L, dtype=torch.bool)
    dur_mask[1, 2] = False
    args = (
        torch.randn(B, T, M), torch.randn(B, T, M), torch.randn(B, L), torch.randn(B, L, 1), torch.randn(B, L, 1),
        torch.randn(B, T, M), torch.randint(1, 3, (B, L)), torch.randn(B, L, 1), torch.randn(B, L, 1),
        dur_mask, spec_mask,
    )
    no_post = (None,) + args[1:]
    return FastSpeech2ConformerLoss(), [args, no_post]
