"""torchaudio Tacotron2 encoder: conv stack with training-gated dropout, `input_lengths.cpu()`, pack_padded_sequence and an nn.LSTM.

Source: pytorch/audio@v2.11.0:src/torchaudio/models/tacotron2.py:359-418
Kept: _Encoder (the conv + batch norm list, F.dropout(relu, 0.5, self.training),
transpose, `input_lengths.cpu()`, pack_padded_sequence, flatten_parameters,
the bidirectional LSTM and pad_packed_sequence).
Simplified: 2 conv layers, embedding dim 8, LSTM hidden 4 per direction.
"""
import torch
import torch.nn.functional as F
from torch import Tensor, nn


class _Encoder(nn.Module):
    def __init__(self, encoder_embedding_dim: int = 8, encoder_n_convolution: int = 2, encoder_kernel_size: int = 3):
        super().__init__()
        self.convolutions = nn.ModuleList()
        for _ in range(encoder_n_convolution):
            conv_layer = nn.Sequential(
                nn.Conv1d(encoder_embedding_dim, encoder_embedding_dim, kernel_size=encoder_kernel_size, stride=1, padding=int((encoder_kernel_size - 1) / 2), dilation=1),
                nn.BatchNorm1d(encoder_embedding_dim),
            )
            self.convolutions.append(conv_layer)
        self.lstm = nn.LSTM(encoder_embedding_dim, int(encoder_embedding_dim / 2), 1, batch_first=True, bidirectional=True)
        self.lstm.flatten_parameters()

    def forward(self, x: Tensor, input_lengths: Tensor) -> Tensor:
        for conv in self.convolutions:
            x = F.dropout(F.relu(conv(x)), 0.5, self.training)
        x = x.transpose(1, 2)
        input_lengths = input_lengths.cpu()
        x = nn.utils.rnn.pack_padded_sequence(x, input_lengths, batch_first=True)
        outputs, _ = self.lstm(x)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs, batch_first=True)
        return outputs


encoder = torch.compile(_Encoder().eval())


def make():
    torch.manual_seed(0)
    return _Encoder().eval(), [(torch.randn(2, 8, 5), torch.tensor([5, 3]))]
