"""Tacotron 2 Encoder.forward: `input_lengths.cpu().numpy()` feeds pack_padded_sequence around a bidirectional LSTM, then pad_packed_sequence.

Source: NVIDIA/tacotron2@185cd24e046cc1304b4f8e564734d2498c6e2e6f:model.py:149-202
Also: layers.py:22-36 (ConvNorm), model.py:457-470 (Tacotron2.__init__ embedding).
Kept: the conv bank with BatchNorm and dropout, the lengths-to-numpy
conversion, flatten_parameters, pack/pad around the LSTM, and the embedding
stage of Tacotron2.forward that calls it.
Simplified: 2 convolutions of 8 channels, 10 symbols; no decoder/postnet.
"""
import torch
from torch import nn
from torch.nn import functional as F


class HParams:
    n_symbols = 10
    symbols_embedding_dim = 8
    encoder_embedding_dim = 8
    encoder_n_convolutions = 2
    encoder_kernel_size = 3


class ConvNorm(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=1, stride=1,
                 padding=None, dilation=1, bias=True, w_init_gain='linear'):
        super(ConvNorm, self).__init__()
        if padding is None:
            assert(kernel_size % 2 == 1)
            padding = int(dilation * (kernel_size - 1) / 2)

        self.conv = torch.nn.Conv1d(in_channels, out_channels,
                                    kernel_size=kernel_size, stride=stride,
                                    padding=padding, dilation=dilation,
                                    bias=bias)

        torch.nn.init.xavier_uniform_(
            self.conv.weight, gain=torch.nn.init.calculate_gain(w_init_gain))

    def forward(self, signal):
        conv_signal = self.conv(signal)
        return conv_signal


class Encoder(nn.Module):
    """Encoder module:
        - Three 1-d convolution banks
        - Bidirectional LSTM
    """
    def __init__(self, hparams):
        super(Encoder, self).__init__()

        convolutions = []
        for _ in range(hparams.encoder_n_convolutions):
            conv_layer = nn.Sequential(
                ConvNorm(hparams.encoder_embedding_dim,
                         hparams.encoder_embedding_dim,
                         kernel_size=hparams.encoder_kernel_size, stride=1,
                         padding=int((hparams.encoder_kernel_size - 1) / 2),
                         dilation=1, w_init_gain='relu'),
                nn.BatchNorm1d(hparams.encoder_embedding_dim))
            convolutions.append(conv_layer)
        self.convolutions = nn.ModuleList(convolutions)

        self.lstm = nn.LSTM(hparams.encoder_embedding_dim,
                            int(hparams.encoder_embedding_dim / 2), 1,
                            batch_first=True, bidirectional=True)

    def forward(self, x, input_lengths):
        for conv in self.convolutions:
            x = F.dropout(F.relu(conv(x)), 0.5, self.training)

        x = x.transpose(1, 2)

        # pytorch tensor are not reversible, hence the conversion
        input_lengths = input_lengths.cpu().numpy()
        x = nn.utils.rnn.pack_padded_sequence(
            x, input_lengths, batch_first=True)

        self.lstm.flatten_parameters()
        outputs, _ = self.lstm(x)

        outputs, _ = nn.utils.rnn.pad_packed_sequence(
            outputs, batch_first=True)

        return outputs


class TextEncoderStage(nn.Module):
    """Tacotron2's embedding + encoder call from Tacotron2.forward."""
    def __init__(self, hparams):
        super().__init__()
        self.embedding = nn.Embedding(
            hparams.n_symbols, hparams.symbols_embedding_dim)
        self.encoder = Encoder(hparams)

    def forward(self, text_inputs, text_lengths):
        text_lengths = text_lengths.data
        embedded_inputs = self.embedding(text_inputs).transpose(1, 2)
        encoder_outputs = self.encoder(embedded_inputs, text_lengths)
        return encoder_outputs


def main():
    model = TextEncoderStage(HParams())
    return torch.compile(model)


def make():
    torch.manual_seed(0)
    text = torch.randint(0, 10, (2, 6))
    return TextEncoderStage(HParams()), [
        (text, torch.tensor([6, 4])),
        (text[:, :5], torch.tensor([5, 5])),
    ]
