"""torchaudio RNN-T predictor: a hand-written LSTM (`_CustomLSTM`) unrolled with unbind over time, layer norms (no break).

Source: pytorch/audio@v2.11.0:src/torchaudio/models/rnnt.py:58-134,317-389
Kept: _CustomLSTM (the state None zeros, x2g / p2g, optional layer norms, the
per-step gate chunk / sigmoid / tanh, the [h, c] state list) and
_Predictor.forward (permute, embedding, input layer norm, the layer loop
threading optional state, dropout, linear, output layer norm, the 3-tuple).
Simplified: 2 layers, hidden 8, symbols 10.
"""
from typing import List, Optional, Tuple

import torch


class _CustomLSTM(torch.nn.Module):
    def __init__(self, input_dim: int, hidden_dim: int, layer_norm: bool = False, layer_norm_epsilon: float = 1e-3) -> None:
        super().__init__()
        self.x2g = torch.nn.Linear(input_dim, 4 * hidden_dim, bias=(not layer_norm))
        self.p2g = torch.nn.Linear(hidden_dim, 4 * hidden_dim, bias=False)
        if layer_norm:
            self.c_norm = torch.nn.LayerNorm(hidden_dim, eps=layer_norm_epsilon)
            self.g_norm = torch.nn.LayerNorm(4 * hidden_dim, eps=layer_norm_epsilon)
        else:
            self.c_norm = torch.nn.Identity()
            self.g_norm = torch.nn.Identity()
        self.hidden_dim = hidden_dim

    def forward(self, input: torch.Tensor, state: Optional[List[torch.Tensor]]) -> Tuple[torch.Tensor, List[torch.Tensor]]:
        if state is None:
            B = input.size(1)
            h = torch.zeros(B, self.hidden_dim, device=input.device, dtype=input.dtype)
            c = torch.zeros(B, self.hidden_dim, device=input.device, dtype=input.dtype)
        else:
            h, c = state
        gated_input = self.x2g(input)
        outputs = []
        for gates in gated_input.unbind(0):
            gates = gates + self.p2g(h)
            gates = self.g_norm(gates)
            input_gate, forget_gate, cell_gate, output_gate = gates.chunk(4, 1)
            input_gate = input_gate.sigmoid()
            forget_gate = forget_gate.sigmoid()
            cell_gate = cell_gate.tanh()
            output_gate = output_gate.sigmoid()
            c = forget_gate * c + input_gate * cell_gate
            c = self.c_norm(c)
            h = output_gate * c.tanh()
            outputs.append(h)
        output = torch.stack(outputs, dim=0)
        state = [h, c]
        return output, state


class _Predictor(torch.nn.Module):
    def __init__(self, num_symbols=10, output_dim=8, symbol_embedding_dim=8, num_lstm_layers=2, lstm_hidden_dim=8, lstm_layer_norm=True, lstm_dropout=0.0):
        super().__init__()
        self.embedding = torch.nn.Embedding(num_symbols, symbol_embedding_dim)
        self.input_layer_norm = torch.nn.LayerNorm(symbol_embedding_dim)
        self.lstm_layers = torch.nn.ModuleList(
            [_CustomLSTM(symbol_embedding_dim if idx == 0 else lstm_hidden_dim, lstm_hidden_dim, layer_norm=lstm_layer_norm) for idx in range(num_lstm_layers)]
        )
        self.dropout = torch.nn.Dropout(p=lstm_dropout)
        self.linear = torch.nn.Linear(lstm_hidden_dim, output_dim)
        self.output_layer_norm = torch.nn.LayerNorm(output_dim)

    def forward(self, input: torch.Tensor, lengths: torch.Tensor, state: Optional[List[List[torch.Tensor]]] = None):
        input_tb = input.permute(1, 0)
        embedding_out = self.embedding(input_tb)
        input_layer_norm_out = self.input_layer_norm(embedding_out)
        lstm_out = input_layer_norm_out
        state_out: List[List[torch.Tensor]] = []
        for layer_idx, lstm in enumerate(self.lstm_layers):
            lstm_out, lstm_state_out = lstm(lstm_out, None if state is None else state[layer_idx])
            lstm_out = self.dropout(lstm_out)
            state_out.append(lstm_state_out)
        linear_out = self.linear(lstm_out)
        output_layer_norm_out = self.output_layer_norm(linear_out)
        return output_layer_norm_out.permute(1, 0, 2), lengths, state_out


predictor = torch.compile(_Predictor())


def make():
    torch.manual_seed(0)
    tokens = torch.tensor([[1, 4, 2], [3, 3, 0]])
    state = [[torch.zeros(2, 8), torch.zeros(2, 8)], [torch.ones(2, 8) * 0.1, torch.zeros(2, 8)]]
    return _Predictor(), [(tokens, torch.tensor([3, 2])), (tokens, torch.tensor([3, 2]), state)]
