"""torchaudio WaveRNN.forward: channel checks, hidden states, two nn.GRU calls interleaved with aux slices.

Source: pytorch/audio@v2.11.0:src/torchaudio/models/wavernn.py:274-329
Kept: the two channel ValueErrors, h1/h2 zeros, the upsample network output
transposes, aux_idx slicing, fc -> rnn1 -> residual -> cat -> rnn2 -> residual
-> fc1/fc2/fc3 with the aux pieces, and the unsqueeze back to a channel dim.
Simplified: the upsample network is two 1x1 convs with repeat_interleave by a
fixed Python scale; n_rnn 8, n_fc 8, n_aux 2.
"""
import torch
from torch import Tensor, nn


class UpsampleNetwork(nn.Module):
    def __init__(self, n_freq=4, n_aux=2, total_scale=2):
        super().__init__()
        self.spec = nn.Conv1d(n_freq, n_freq, 1)
        self.aux = nn.Conv1d(n_freq, n_aux * 4, 1)
        self.total_scale = total_scale

    def forward(self, specgram):
        return (self.spec(specgram).repeat_interleave(self.total_scale, dim=-1),
                self.aux(specgram).repeat_interleave(self.total_scale, dim=-1))


class WaveRNN(nn.Module):
    def __init__(self, n_rnn=8, n_fc=8, n_freq=4, n_aux=2, n_output=3):
        super().__init__()
        self.n_rnn = n_rnn
        self.n_aux = n_aux
        self.upsample = UpsampleNetwork(n_freq, n_aux)
        self.fc = nn.Linear(n_freq + n_aux + 1, n_rnn)
        self.rnn1 = nn.GRU(n_rnn, n_rnn, batch_first=True)
        self.rnn2 = nn.GRU(n_rnn + n_aux, n_rnn, batch_first=True)
        self.relu1 = nn.ReLU(inplace=True)
        self.relu2 = nn.ReLU(inplace=True)
        self.fc1 = nn.Linear(n_rnn + n_aux, n_fc)
        self.fc2 = nn.Linear(n_fc + n_aux, n_fc)
        self.fc3 = nn.Linear(n_fc, n_output)

    def forward(self, waveform: Tensor, specgram: Tensor) -> Tensor:
        if waveform.size(1) != 1:
            raise ValueError("Require the input channel of waveform is 1")
        if specgram.size(1) != 1:
            raise ValueError("Require the input channel of specgram is 1")
        waveform, specgram = waveform.squeeze(1), specgram.squeeze(1)
        batch_size = waveform.size(0)
        h1 = torch.zeros(1, batch_size, self.n_rnn, dtype=waveform.dtype, device=waveform.device)
        h2 = torch.zeros(1, batch_size, self.n_rnn, dtype=waveform.dtype, device=waveform.device)
        specgram, aux = self.upsample(specgram)
        specgram = specgram.transpose(1, 2)
        aux = aux.transpose(1, 2)
        aux_idx = [self.n_aux * i for i in range(5)]
        a1 = aux[:, :, aux_idx[0] : aux_idx[1]]
        a2 = aux[:, :, aux_idx[1] : aux_idx[2]]
        a3 = aux[:, :, aux_idx[2] : aux_idx[3]]
        a4 = aux[:, :, aux_idx[3] : aux_idx[4]]
        x = torch.cat([waveform.unsqueeze(-1), specgram, a1], dim=-1)
        x = self.fc(x)
        res = x
        x, _ = self.rnn1(x, h1)
        x = x + res
        res = x
        x = torch.cat([x, a2], dim=-1)
        x, _ = self.rnn2(x, h2)
        x = x + res
        x = torch.cat([x, a3], dim=-1)
        x = self.fc1(x)
        x = self.relu1(x)
        x = torch.cat([x, a4], dim=-1)
        x = self.fc2(x)
        x = self.relu2(x)
        x = self.fc3(x)
        return x.unsqueeze(1)


def train():
    model = WaveRNN()
    compiled = torch.compile(model)
    return compiled


def make():
    torch.manual_seed(0)
    return WaveRNN(), [(torch.randn(2, 1, 6), torch.randn(2, 1, 4, 3))]
