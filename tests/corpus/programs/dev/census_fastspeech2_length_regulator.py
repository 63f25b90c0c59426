"""FastSpeech2-Conformer length regulator: `if duration_labels.sum() == 0`, a max length from tensor data,
and `torch.repeat_interleave` with tensor repeats per batch row.

Source: huggingface/transformers@v5.23.0:src/transformers/models/fastspeech2_conformer/modeling_fastspeech2_conformer.py:80-126
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): FastSpeech2ConformerModel eval+train,
lines 116 (`if duration_labels.sum() == 0`), 123 (`torch.zeros((..., max_len, ...))`), 131 (`repeat_interleave`).
Kept: `length_regulator` verbatim in shape (speaking_speed checks, the all-zero fix-up, the padded buffer,
the per-row loop) and a module that calls it from forward.
Simplified: the variance predictors are replaced by given duration labels.
"""
import torch
from torch import nn


def length_regulator(encoded_embeddings, duration_labels, speaking_speed=1.0):
    if speaking_speed <= 0:
        raise ValueError("`speaking_speed` must be greater than 0.")
    elif speaking_speed != 1.0:
        duration_labels = torch.round(duration_labels.float() * speaking_speed).long()

    if duration_labels.sum() == 0:
        duration_labels[duration_labels.sum(dim=1).eq(0)] = 1

    # Calculate the maximum length needed
    max_len = torch.sum(duration_labels, dim=1).max()

    # Create a padded tensor to hold the results
    hidden_states = torch.zeros(
        (encoded_embeddings.size(0), max_len, encoded_embeddings.size(2)),
        dtype=torch.float,
        device=encoded_embeddings.device,
    )

    # Loop through the batch and fill in the data
    for i, (encoded_embedding, target_duration) in enumerate(zip(encoded_embeddings, duration_labels)):
        repeated = torch.repeat_interleave(encoded_embedding, target_duration, dim=0)
        hidden_states[i, : repeated.size(0)] = repeated

    return hidden_states


class VarianceAdaptor(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, encoder_hidden_states, duration_labels, speaking_speed=1.0):
        hidden_states = self.proj(encoder_hidden_states)
        return length_regulator(hidden_states, duration_labels, speaking_speed)


adaptor = torch.compile(VarianceAdaptor())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4)
    return VarianceAdaptor(), [
        (x, torch.tensor([[1, 2, 1], [2, 0, 1]])),
        (x, torch.zeros(2, 3, dtype=torch.long)),
        (x, torch.tensor([[1, 1, 1], [2, 2, 2]]), 2.0),
    ]
