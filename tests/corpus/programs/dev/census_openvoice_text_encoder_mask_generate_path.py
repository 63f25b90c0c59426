"""OpenVoice (VITS) text encoder mask and monotonic path: `sequence_mask(x_lengths, x.size(2))` with an
explicit max length and `generate_path` over cumulative durations (tensor ops only; no break).

Source: myshell-ai/OpenVoice@858b29cd:openvoice/commons.py (sequence_mask, generate_path, convert_pad_shape) and
openvoice/models.py (TextEncoder.forward's x_mask)
Census: penguinwu/oss-model-graph-break-corpus corpora/custom-models: OpenVoice-SynthesizerTrn-infer (graph_break:
nonzero, item, data-dependent branch); these two helpers are the part of its path that traces cleanly.
Kept: the three commons helpers verbatim; the encoder's embedding/mask/projection shape.
Simplified: the attention encoder is a Conv1d; durations are given.
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


def generate_path(duration, mask):
    """
    duration: [b, 1, t_x]
    mask: [b, 1, t_y, t_x]
    """

    b, _, t_y, t_x = mask.shape
    cum_duration = torch.cumsum(duration, -1)

    cum_duration_flat = cum_duration.view(b * t_x)
    path = sequence_mask(cum_duration_flat, t_y).to(mask.dtype)
    path = path.view(b, t_x, t_y)
    path = path - F.pad(path, convert_pad_shape([[0, 0], [1, 0], [0, 0]]))[:, :-1]
    path = path.unsqueeze(1).transpose(2, 3) * mask
    return path


class TextEncoder(nn.Module):
    def __init__(self, n_vocab=10, hidden_channels=4, out_channels=2):
        super().__init__()
        self.emb = nn.Embedding(n_vocab, hidden_channels)
        self.encoder = nn.Conv1d(hidden_channels, hidden_channels, 3, padding=1)
        self.proj = nn.Conv1d(hidden_channels, out_channels * 2, 1)
        self.hidden_channels = hidden_channels

    def forward(self, x, x_lengths, w_ceil, y_len):
        x = self.emb(x) * (self.hidden_channels ** 0.5)  # [b, t, h]
        x = torch.transpose(x, 1, -1)  # [b, h, t]
        x_mask = torch.unsqueeze(sequence_mask(x_lengths, x.size(2)), 1).to(x.dtype)
        x = self.encoder(x * x_mask) * x_mask
        stats = self.proj(x) * x_mask
        y_mask = torch.ones(x.size(0), 1, y_len, dtype=x.dtype)
        attn_mask = torch.unsqueeze(x_mask, 2) * torch.unsqueeze(y_mask, -1)
        attn = generate_path(w_ceil, attn_mask)
        return stats, attn


enc_p = torch.compile(TextEncoder())


def make():
    torch.manual_seed(0)
    x = torch.tensor([[1, 2, 3, 4], [5, 6, 0, 0]])
    return TextEncoder(), [(x, torch.tensor([4, 2]), torch.tensor([[[1.0, 2.0, 1.0, 2.0]], [[3.0, 1.0, 0.0, 0.0]]]), 6)]
