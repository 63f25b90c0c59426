"""pytorch-forecasting's zero-length-safe LSTM: `lengths.min()` / `lengths.max()` drive `if max_length == 0` and `if min_length == 0` around a packed `nn.LSTM` forward reached through `super().forward`.

Source: sktime/pytorch-forecasting@0aef839009f550e387898f579e76e71ebff78ff2:pytorch_forecasting/models/nn/rnn.py:15-274
Also: pytorch_forecasting/models/temporal_fusion_transformer/_tft.py (the
`self.lstm_encoder(embeddings_varying_encoder, (input_hidden, input_cell),
lengths=encoder_lengths, enforce_sorted=False)` call).
Kept: RNN.forward verbatim (the assert on min_length, the all-empty early
return, pack with clamped lengths, handle_no_encoding when some length is
0), LSTM's handle_no_encoding / init_hidden_state, get_rnn.
Simplified: the TFT around the encoder call is a small module with a linear
input projection and a zero initial state; hidden 4, 1 layer.
"""
from abc import ABC, abstractmethod
from typing import Tuple, Type, Union

import torch
from torch import nn
from torch.nn.utils import rnn

HiddenState = Union[Tuple[torch.Tensor, torch.Tensor], torch.Tensor]


class RNN(ABC, nn.RNNBase):
    """
    Base class flexible RNNs.

    Forward function can handle sequences of length 0.
    """

    @abstractmethod
    def handle_no_encoding(
        self,
        hidden_state: HiddenState,
        no_encoding: torch.BoolTensor,
        initial_hidden_state: HiddenState,
    ) -> HiddenState:
        pass

    @abstractmethod
    def init_hidden_state(self, x: torch.Tensor) -> HiddenState:
        pass

    @abstractmethod
    def repeat_interleave(
        self, hidden_state: HiddenState, n_samples: int
    ) -> HiddenState:
        pass

    def forward(
        self,
        x: Union[rnn.PackedSequence, torch.Tensor],
        hx: HiddenState = None,
        lengths: torch.LongTensor = None,
        enforce_sorted: bool = True,
    ) -> Tuple[Union[rnn.PackedSequence, torch.Tensor], HiddenState]:
        if isinstance(x, rnn.PackedSequence) or lengths is None:
            assert lengths is None, (
                "cannot combine x of type PackedSequence with lengths argument"
            )
            return super().forward(x, hx=hx)
        else:
            min_length = lengths.min()
            max_length = lengths.max()
            assert min_length >= 0, "sequence lengths must be great equals 0"

            if max_length == 0:
                hidden_state = self.init_hidden_state(x)
                if self.batch_first:
                    out = torch.zeros(
                        lengths.size(0),
                        x.size(1),
                        self.hidden_size,
                        dtype=x.dtype,
                        device=x.device,
                    )
                else:
                    out = torch.zeros(
                        x.size(0),
                        lengths.size(0),
                        self.hidden_size,
                        dtype=x.dtype,
                        device=x.device,
                    )
                return out, hidden_state
            else:
                pack_lengths = lengths.where(lengths > 0, torch.ones_like(lengths))
                packed_out, hidden_state = super().forward(
                    rnn.pack_padded_sequence(
                        x,
                        pack_lengths.cpu(),
                        enforce_sorted=enforce_sorted,
                        batch_first=self.batch_first,
                    ),
                    hx=hx,
                )
                # replace hidden cell with initial input if encoder_length
                # is zero to determine correct initial state
                if min_length == 0:
                    no_encoding = (lengths == 0)[
                        None, :, None
                    ]  # shape: n_layers * n_directions x batch_size x hidden_size
                    if hx is None:
                        initial_hidden_state = self.init_hidden_state(x)
                    else:
                        initial_hidden_state = hx
                    # propagate initial hidden state when sequence length was 0
                    hidden_state = self.handle_no_encoding(
                        hidden_state, no_encoding, initial_hidden_state
                    )

                # return unpacked sequence
                out, _ = rnn.pad_packed_sequence(
                    packed_out, batch_first=self.batch_first
                )
                return out, hidden_state


class LSTM(RNN, nn.LSTM):
    """LSTM that can handle zero-length sequences"""

    def handle_no_encoding(
        self,
        hidden_state: HiddenState,
        no_encoding: torch.BoolTensor,
        initial_hidden_state: HiddenState,
    ) -> HiddenState:
        hidden, cell = hidden_state
        hidden = hidden.masked_scatter(no_encoding, initial_hidden_state[0])
        cell = cell.masked_scatter(no_encoding, initial_hidden_state[0])
        return hidden, cell

    def init_hidden_state(self, x: torch.Tensor) -> HiddenState:
        num_directions = 2 if self.bidirectional else 1
        if self.batch_first:
            batch_size = x.size(0)
        else:
            batch_size = x.size(1)
        hidden = torch.zeros(
            (self.num_layers * num_directions, batch_size, self.hidden_size),
            device=x.device,
            dtype=x.dtype,
        )
        cell = torch.zeros(
            (self.num_layers * num_directions, batch_size, self.hidden_size),
            device=x.device,
            dtype=x.dtype,
        )
        return hidden, cell

    def repeat_interleave(
        self, hidden_state: HiddenState, n_samples: int
    ) -> HiddenState:
        hidden, cell = hidden_state
        hidden = hidden.repeat_interleave(n_samples, 1)
        cell = cell.repeat_interleave(n_samples, 1)
        return hidden, cell


class GRU(RNN, nn.GRU):
    """GRU that can handle zero-length sequences"""

    def handle_no_encoding(
        self,
        hidden_state: HiddenState,
        no_encoding: torch.BoolTensor,
        initial_hidden_state: HiddenState,
    ) -> HiddenState:
        return hidden_state.masked_scatter(no_encoding, initial_hidden_state)

    def init_hidden_state(self, x: torch.Tensor) -> HiddenState:
        if self.batch_first:
            batch_size = x.size(0)
        else:
            batch_size = x.size(1)
        num_directions = 2 if self.bidirectional else 1
        hidden = torch.zeros(
            (self.num_layers * num_directions, batch_size, self.hidden_size),
            device=x.device,
            dtype=x.dtype,
        )
        return hidden

    def repeat_interleave(
        self, hidden_state: HiddenState, n_samples: int
    ) -> HiddenState:
        return hidden_state.repeat_interleave(n_samples, 1)


def get_rnn(cell_type: Union[Type[RNN], str]) -> Type[RNN]:
    if isinstance(cell_type, RNN):
        rnn = cell_type
    elif cell_type == "LSTM":
        rnn = LSTM
    elif cell_type == "GRU":
        rnn = GRU
    else:
        raise ValueError(
            f"RNN type {cell_type} is not supported. supported: [LSTM, GRU]"
        )
    return rnn


class EncoderStage(nn.Module):
    """The LSTM encoder call of the Temporal Fusion Transformer's forward."""

    def __init__(self, input_size=3, hidden_size=4, lstm_layers=1, cell_type="LSTM"):
        super().__init__()
        self.hidden_size = hidden_size
        self.lstm_layers = lstm_layers
        self.prescaler = nn.Linear(input_size, hidden_size)
        self.lstm_encoder = get_rnn(cell_type)(
            input_size=hidden_size,
            hidden_size=hidden_size,
            num_layers=lstm_layers,
            dropout=0.0,
            batch_first=True,
        )

    def forward(self, x_cont, encoder_lengths):
        embeddings_varying_encoder = self.prescaler(x_cont)
        input_hidden = torch.zeros(
            self.lstm_layers, x_cont.size(0), self.hidden_size, device=x_cont.device
        )
        input_cell = torch.zeros_like(input_hidden)
        encoder_output, (hidden, cell) = self.lstm_encoder(
            embeddings_varying_encoder,
            (input_hidden, input_cell),
            lengths=encoder_lengths,
            enforce_sorted=False,
        )
        return encoder_output, hidden, cell


def make():
    torch.manual_seed(0)
    stage = EncoderStage()
    x = torch.randn(3, 5, 3)
    return stage, [
        (x, torch.tensor([5, 3, 4])),
        (x, torch.tensor([5, 0, 2])),
        (x, torch.tensor([0, 0, 0])),
    ]


def configure_model():
    return torch.compile(EncoderStage(), dynamic=False)
