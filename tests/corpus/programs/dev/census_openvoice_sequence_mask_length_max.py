"""OpenVoice (VITS) posterior encoder: `sequence_mask(y_lengths)` without a max length takes `length.max()` and
builds `torch.arange(max_length)` from it.

Source: myshell-ai/OpenVoice@858b29cd:openvoice/commons.py (sequence_mask) and openvoice/models.py
(PosteriorEncoder.forward: `x_mask = torch.unsqueeze(commons.sequence_mask(x_lengths, x.size(2)), 1)`;
the voice-conversion path calls `sequence_mask(y_lengths)` through the reference encoder)
Census: penguinwu/oss-model-graph-break-corpus corpora/custom-models: OpenVoice-SynthesizerTrn (voice_conversion)
graph_break, 7 breaks, Tensor.item().
Kept: sequence_mask verbatim and a posterior encoder that masks with it; lengths come from the batch.
Simplified: the WaveNet stack is a Conv1d.
"""
import torch
from torch import nn
from torch.nn import functional as F


def convert_pad_shape(pad_shape):
    layer = pad_shape[::-1]
    pad_shape = [item for sublist in layer for item in sublist]
    return pad_shape


def sequence_mask(length, max_length=None):
    if max_length is None:
        max_length = length.max()
    x = torch.arange(max_length, dtype=length.dtype, device=length.device)
    return x.unsqueeze(0) < length.unsqueeze(1)


class PosteriorEncoder(nn.Module):
    def __init__(self, in_channels=3, hidden_channels=4, out_channels=2):
        super().__init__()
        self.pre = nn.Conv1d(in_channels, hidden_channels, 1)
        self.enc = nn.Conv1d(hidden_channels, hidden_channels, 3, padding=1)
        self.proj = nn.Conv1d(hidden_channels, out_channels * 2, 1)

    def forward(self, x, x_lengths):
        x_mask = torch.unsqueeze(sequence_mask(x_lengths), 1).to(x.dtype)
        x = x[:, :, : x_mask.size(2)]
        x = self.pre(x) * x_mask
        x = self.enc(x) * x_mask
        stats = self.proj(x) * x_mask
        m, logs = torch.split(stats, 2, dim=1)
        z = (m + torch.randn_like(m) * torch.exp(logs)) * x_mask
        return z, m, logs, x_mask


enc_q = torch.compile(PosteriorEncoder())


def make():
    torch.manual_seed(0)
    return PosteriorEncoder(), [(torch.randn(2, 3, 6), torch.tensor([6, 4]))]
