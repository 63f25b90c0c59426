"""EnCodec's `EncodecLSTM`: an `nn.LSTM` call inside the encoder (RNN modules are not traced by Dynamo).

Source: huggingface/transformers@v5.23.0:src/transformers/models/encodec/modeling_encodec.py:236-250
Census: penguinwu/oss-model-graph-break-corpus explain_results (pt2.10): EncodecModel eval+train,
`modeling_encodec.py:247 hidden_states = self.lstm(hidden_states)[0] + hidden_states`; EncodecModel has the
most breaks in the census (29 eval / 30 train).
Kept: EncodecLSTM (permute to time-major, LSTM, residual, permute back) inside a conv encoder stack.
Simplified: two Conv1d layers around the LSTM, 4 channels, one LSTM layer.
"""
import torch
from torch import nn


class EncodecConfig:
    num_lstm_layers = 1
    hidden_size = 4


class EncodecLSTM(nn.Module):
    """
    LSTM without worrying about the hidden state, nor the layout of the data. Expects input as convolutional layout.
    """

    def __init__(self, config, dimension):
        super().__init__()
        self.lstm = nn.LSTM(dimension, dimension, config.num_lstm_layers)

    def forward(self, hidden_states):
        hidden_states = hidden_states.permute(2, 0, 1)
        hidden_states = self.lstm(hidden_states)[0] + hidden_states
        hidden_states = hidden_states.permute(1, 2, 0)
        return hidden_states


class EncodecEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([
            nn.Conv1d(1, config.hidden_size, 3, padding=1),
            nn.ELU(),
            EncodecLSTM(config, config.hidden_size),
            nn.Conv1d(config.hidden_size, config.hidden_size, 3, padding=1),
        ])

    def forward(self, hidden_states):
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        return hidden_states


encoder = torch.compile(EncodecEncoder(EncodecConfig()).eval())


def make():
    torch.manual_seed(0)
    return EncodecEncoder(EncodecConfig()).eval(), [(torch.randn(1, 1, 12),)]
