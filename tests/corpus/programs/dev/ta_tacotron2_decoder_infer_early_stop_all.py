"""torchaudio Tacotron2 _Decoder.infer: the decode loop stops on `torch.all(finished)`, then warns at max steps.

Source: pytorch/audio@v2.11.0:src/torchaudio/models/tacotron2.py:105-119,190-330,560-820
Kept: _get_mask_from_lengths (.item() bound), _Prenet's always-on dropout,
_LocationLayer/_Attention (processed memory, location conv, masked_fill with
score_mask_value, softmax, bmm), _initialize_decoder_states, decode()'s two
LSTMCells and 9-tuple return, infer()'s loop with
`mel_specgram_lengths[~finished] += 1`, `finished |= sigmoid(gate) > threshold`,
`if self.decoder_early_stopping and torch.all(finished): break`, the
warnings.warn when the loop hits decoder_max_step, _parse_decoder_outputs.
Simplified: all dims 4-8, decoder_max_step 3, n_frames_per_step 1, dropout
of the LSTMs 0; the compiled entry is a small wrapper calling infer.
"""
import warnings
from typing import List, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def _get_mask_from_lengths(lengths: Tensor) -> Tensor:
    max_len = torch.max(lengths).item()
    ids = torch.arange(0, max_len, device=lengths.device, dtype=lengths.dtype)
    mask = (ids < lengths.unsqueeze(1)).byte()
    mask = torch.le(mask, 0)
    return mask


class _Prenet(nn.Module):
    def __init__(self, in_dim: int, out_sizes: List[int]) -> None:
        super().__init__()
        in_sizes = [in_dim] + out_sizes[:-1]
        self.layers = nn.ModuleList(
            [nn.Linear(in_size, out_size, bias=False) for (in_size, out_size) in zip(in_sizes, out_sizes)]
        )

    def forward(self, x: Tensor) -> Tensor:
        for linear in self.layers:
            x = F.dropout(F.relu(linear(x)), p=0.5, training=True)
        return x


class _LocationLayer(nn.Module):
    def __init__(self, attention_n_filter: int, attention_kernel_size: int, attention_hidden_dim: int):
        super().__init__()
        padding = int((attention_kernel_size - 1) / 2)
        self.location_conv = nn.Conv1d(2, attention_n_filter, kernel_size=attention_kernel_size, padding=padding,
                                       bias=False)
        self.location_dense = nn.Linear(attention_n_filter, attention_hidden_dim, bias=False)

    def forward(self, attention_weights_cat: Tensor) -> Tensor:
        processed_attention = self.location_conv(attention_weights_cat)
        processed_attention = processed_attention.transpose(1, 2)
        processed_attention = self.location_dense(processed_attention)
        return processed_attention


class _Attention(nn.Module):
    def __init__(self, attention_rnn_dim, encoder_embedding_dim, attention_hidden_dim, attention_location_n_filter,
                 attention_location_kernel_size):
        super().__init__()
        self.query_layer = nn.Linear(attention_rnn_dim, attention_hidden_dim, bias=False)
        self.memory_layer = nn.Linear(encoder_embedding_dim, attention_hidden_dim, bias=False)
        self.v = nn.Linear(attention_hidden_dim, 1, bias=False)
        self.location_layer = _LocationLayer(attention_location_n_filter, attention_location_kernel_size,
                                             attention_hidden_dim)
        self.score_mask_value = -float("inf")

    def _get_alignment_energies(self, query: Tensor, processed_memory: Tensor, attention_weights_cat: Tensor) -> Tensor:
        processed_query = self.query_layer(query.unsqueeze(1))
        processed_attention_weights = self.location_layer(attention_weights_cat)
        energies = self.v(torch.tanh(processed_query + processed_attention_weights + processed_memory))
        alignment = energies.squeeze(2)
        return alignment

    def forward(self, attention_hidden_state, memory, processed_memory, attention_weights_cat, mask):
        alignment = self._get_alignment_energies(attention_hidden_state, processed_memory, attention_weights_cat)
        alignment = alignment.masked_fill(mask, self.score_mask_value)
        attention_weights = F.softmax(alignment, dim=1)
        attention_context = torch.bmm(attention_weights.unsqueeze(1), memory)
        attention_context = attention_context.squeeze(1)
        return attention_context, attention_weights


class _Decoder(nn.Module):
    def __init__(self, n_mels, n_frames_per_step, encoder_embedding_dim, decoder_rnn_dim, decoder_max_step,
                 decoder_dropout, decoder_early_stopping, attention_rnn_dim, attention_hidden_dim,
                 attention_location_n_filter, attention_location_kernel_size, attention_dropout, prenet_dim,
                 gate_threshold):
        super().__init__()
        self.n_mels = n_mels
        self.n_frames_per_step = n_frames_per_step
        self.encoder_embedding_dim = encoder_embedding_dim
        self.attention_rnn_dim = attention_rnn_dim
        self.decoder_rnn_dim = decoder_rnn_dim
        self.prenet_dim = prenet_dim
        self.decoder_max_step = decoder_max_step
        self.gate_threshold = gate_threshold
        self.attention_dropout = attention_dropout
        self.decoder_dropout = decoder_dropout
        self.decoder_early_stopping = decoder_early_stopping
        self.prenet = _Prenet(n_mels * n_frames_per_step, [prenet_dim, prenet_dim])
        self.attention_rnn = nn.LSTMCell(prenet_dim + encoder_embedding_dim, attention_rnn_dim)
        self.attention_layer = _Attention(attention_rnn_dim, encoder_embedding_dim, attention_hidden_dim,
                                          attention_location_n_filter, attention_location_kernel_size)
        self.decoder_rnn = nn.LSTMCell(attention_rnn_dim + encoder_embedding_dim, decoder_rnn_dim, True)
        self.linear_projection = nn.Linear(decoder_rnn_dim + encoder_embedding_dim, n_mels * n_frames_per_step)
        self.gate_layer = nn.Linear(decoder_rnn_dim + encoder_embedding_dim, 1, bias=True)

    def _initialize_decoder_states(self, memory: Tensor):
        n_batch = memory.size(0)
        max_time = memory.size(1)
        dtype = memory.dtype
        device = memory.device
        attention_hidden = torch.zeros(n_batch, self.attention_rnn_dim, dtype=dtype, device=device)
        attention_cell = torch.zeros(n_batch, self.attention_rnn_dim, dtype=dtype, device=device)
        decoder_hidden = torch.zeros(n_batch, self.decoder_rnn_dim, dtype=dtype, device=device)
        decoder_cell = torch.zeros(n_batch, self.decoder_rnn_dim, dtype=dtype, device=device)
        attention_weights = torch.zeros(n_batch, max_time, dtype=dtype, device=device)
        attention_weights_cum = torch.zeros(n_batch, max_time, dtype=dtype, device=device)
        attention_context = torch.zeros(n_batch, self.encoder_embedding_dim, dtype=dtype, device=device)
        processed_memory = self.attention_layer.memory_layer(memory)
        return (attention_hidden, attention_cell, decoder_hidden, decoder_cell, attention_weights,
                attention_weights_cum, attention_context, processed_memory)

    def _parse_decoder_outputs(self, mel_specgram: Tensor, gate_outputs: Tensor,
                               alignments: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        alignments = alignments.transpose(0, 1).contiguous()
        gate_outputs = gate_outputs.transpose(0, 1).contiguous()
        mel_specgram = mel_specgram.transpose(0, 1).contiguous()
        shape = (mel_specgram.shape[0], -1, self.n_mels)
        mel_specgram = mel_specgram.view(*shape)
        mel_specgram = mel_specgram.transpose(1, 2)
        return mel_specgram, gate_outputs, alignments

    def decode(self, decoder_input, attention_hidden, attention_cell, decoder_hidden, decoder_cell, attention_weights,
               attention_weights_cum, attention_context, memory, processed_memory, mask):
        cell_input = torch.cat((decoder_input, attention_context), -1)
        attention_hidden, attention_cell = self.attention_rnn(cell_input, (attention_hidden, attention_cell))
        attention_hidden = F.dropout(attention_hidden, self.attention_dropout, self.training)
        attention_weights_cat = torch.cat((attention_weights.unsqueeze(1), attention_weights_cum.unsqueeze(1)), dim=1)
        attention_context, attention_weights = self.attention_layer(
            attention_hidden, memory, processed_memory, attention_weights_cat, mask
        )
        attention_weights_cum += attention_weights
        decoder_input = torch.cat((attention_hidden, attention_context), -1)
        decoder_hidden, decoder_cell = self.decoder_rnn(decoder_input, (decoder_hidden, decoder_cell))
        decoder_hidden = F.dropout(decoder_hidden, self.decoder_dropout, self.training)
        decoder_hidden_attention_context = torch.cat((decoder_hidden, attention_context), dim=1)
        decoder_output = self.linear_projection(decoder_hidden_attention_context)
        gate_prediction = self.gate_layer(decoder_hidden_attention_context)
        return (decoder_output, gate_prediction, attention_hidden, attention_cell, decoder_hidden, decoder_cell,
                attention_weights, attention_weights_cum, attention_context)

    def _get_go_frame(self, memory: Tensor) -> Tensor:
        n_batch = memory.size(0)
        dtype = memory.dtype
        device = memory.device
        decoder_input = torch.zeros(n_batch, self.n_mels * self.n_frames_per_step, dtype=dtype, device=device)
        return decoder_input

    def infer(self, memory: Tensor, memory_lengths: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
        batch_size, device = memory.size(0), memory.device

        decoder_input = self._get_go_frame(memory)

        mask = _get_mask_from_lengths(memory_lengths)
        (
            attention_hidden,
            attention_cell,
            decoder_hidden,
            decoder_cell,
            attention_weights,
            attention_weights_cum,
            attention_context,
            processed_memory,
        ) = self._initialize_decoder_states(memory)

        mel_specgram_lengths = torch.zeros([batch_size], dtype=torch.int32, device=device)
        finished = torch.zeros([batch_size], dtype=torch.bool, device=device)
        mel_specgrams: List[Tensor] = []
        gate_outputs: List[Tensor] = []
        alignments: List[Tensor] = []
        for _ in range(self.decoder_max_step):
            decoder_input = self.prenet(decoder_input)
            (
                mel_specgram,
                gate_output,
                attention_hidden,
                attention_cell,
                decoder_hidden,
                decoder_cell,
                attention_weights,
                attention_weights_cum,
                attention_context,
            ) = self.decode(
                decoder_input,
                attention_hidden,
                attention_cell,
                decoder_hidden,
                decoder_cell,
                attention_weights,
                attention_weights_cum,
                attention_context,
                memory,
                processed_memory,
                mask,
            )

            mel_specgrams.append(mel_specgram.unsqueeze(0))
            gate_outputs.append(gate_output.transpose(0, 1))
            alignments.append(attention_weights)
            mel_specgram_lengths[~finished] += 1

            finished |= torch.sigmoid(gate_output.squeeze(1)) > self.gate_threshold
            if self.decoder_early_stopping and torch.all(finished):
                break

            decoder_input = mel_specgram

        if len(mel_specgrams) == self.decoder_max_step:
            warnings.warn(
                "Reached max decoder steps. The generated spectrogram might not cover " "the whole transcript."
            )

        mel_specgrams = torch.cat(mel_specgrams, dim=0)
        gate_outputs = torch.cat(gate_outputs, dim=0)
        alignments = torch.cat(alignments, dim=0)

        mel_specgrams, gate_outputs, alignments = self._parse_decoder_outputs(mel_specgrams, gate_outputs, alignments)

        return mel_specgrams, mel_specgram_lengths, gate_outputs, alignments


class Synthesizer(nn.Module):
    def __init__(self, gate_threshold=0.5):
        super().__init__()
        self.decoder = _Decoder(4, 1, 6, 8, 3, 0.0, True, 8, 4, 2, 3, 0.0, 4, gate_threshold)

    def forward(self, memory, memory_lengths):
        return self.decoder.infer(memory, memory_lengths)


def build(gate_threshold=0.5):
    return Synthesizer(gate_threshold).eval()


synth = torch.compile(build(), backend="inductor")


def make():
    torch.manual_seed(0)
    memory = torch.randn(2, 5, 6)
    lengths = torch.tensor([5, 3])
    return build(), [(memory, lengths), (memory * 0.0, lengths)]
