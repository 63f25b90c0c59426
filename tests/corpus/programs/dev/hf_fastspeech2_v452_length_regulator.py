"""FastSpeech2-Conformer length_regulator at v4.52.4: `if duration_labels.sum() == 0:`, masked fix-up, `.max()` as a tensor size, repeat_interleave by durations.

Source: huggingface/transformers@v4.52.4:src/transformers/models/fastspeech2_conformer/modeling_fastspeech2_conformer.py:139-183
Kept: length_regulator verbatim (the speaking_speed ValueError and rounding,
the all-zero duration fix with a boolean-mask write, max_len from the summed
durations, zeros of that size, the per-example repeat_interleave loop and the
slice assignment), as the variance adaptor calls it with predicted durations.
Simplified: embeddings 2x3x4.
"""
import torch
from torch import nn


def length_regulator(encoded_embeddings, duration_labels, speaking_speed=1.0):
    if speaking_speed <= 0:
        raise ValueError('`speaking_speed` must be greater than 0.')
    elif speaking_speed != 1.0:
        duration_labels = torch.round(duration_labels.float() * speaking_speed).long()
    if duration_labels.sum() == 0:
        duration_labels[duration_labels.sum(dim=1).eq(0)] = 1
    max_len = torch.sum(duration_labels, dim=1).max()
    hidden_states = torch.zeros((encoded_embeddings.size(0), max_len, encoded_embeddings.size(2)), dtype=torch.float, device=encoded_embeddings.device)
    for i, (encoded_embedding, target_duration) in enumerate(zip(encoded_embeddings, duration_labels)):
        repeated = torch.repeat_interleave(encoded_embedding, target_duration, dim=0)
        hidden_states[i, :repeated.size(0)] = repeated
    return hidden_states



class VarianceAdaptor(nn.Module):
    def __init__(self):
        super().__init__()
        self.duration_predictor = nn.Linear(4, 1)

    def forward(self, encoded, duration_labels=None, speaking_speed=1.0):
        if duration_labels is None:
            duration_labels = torch.clamp(torch.round(torch.exp(self.duration_predictor(encoded).squeeze(-1))), min=0).long()
        return length_regulator(encoded, duration_labels, speaking_speed)


adaptor = torch.compile(VarianceAdaptor().eval())


def make():
    torch.manual_seed(0)
    enc = torch.randn(2, 3, 4)
    return VarianceAdaptor().eval(), [(enc, torch.tensor([[1, 2, 0], [2, 1, 1]])), (enc, torch.zeros(2, 3, dtype=torch.long), 1.5)]
