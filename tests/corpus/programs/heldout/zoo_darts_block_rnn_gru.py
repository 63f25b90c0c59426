"""Darts BlockRNNModel: `_BlockRNNModule` encodes the input chunk with `self.rnn(x)` (a GRU built by `getattr(nn, name)`) and decodes the last hidden layer with a fully connected stack, behind the `io_processor` decorator.

Source: unit8co/darts@07164811bfc110c0241e62384d6909f21092973c:darts/models/forecasting/block_rnn_model.py:21-186
Also: darts/models/forecasting/pl_forecasting_module.py (io_processor, the
output_chunk_length attribute of PLForecastingModule).
Kept: CustomBlockRNNModule's attributes (num_layers_out_fc default, out_len),
_BlockRNNModule's fc construction with activations between layers, and forward
verbatim (the LSTM hidden-tuple branch).
Simplified: the Lightning base class is a plain nn.Module holding the attributes the
code reads; io_processor keeps only its no-RINorm path; 2 GRU layers of 8, one
hidden fc layer of 6, 2 targets, output chunk 3.
"""
from abc import ABC, abstractmethod
from functools import wraps
from typing import Optional

import torch
import torch.nn as nn


def io_processor(forward):
    """Applies some input / output processing to PLForecastingModule.forward (RINorm when enabled)."""

    @wraps(forward)
    def forward_wrapper(self, *args, **kwargs):
        if not self.use_reversible_instance_norm:
            return forward(self, *args, **kwargs)
        raise NotImplementedError("RINorm is not part of this program")

    return forward_wrapper


class PLPastCovariatesModule(nn.Module):
    def __init__(self, input_chunk_length=None, output_chunk_length=None, use_reversible_instance_norm=False):
        super().__init__()
        self.input_chunk_length = input_chunk_length
        self.output_chunk_length = output_chunk_length
        self.use_reversible_instance_norm = use_reversible_instance_norm


class CustomBlockRNNModule(PLPastCovariatesModule, ABC):
    def __init__(
        self,
        input_size: int,
        hidden_dim: int,
        num_layers: int,
        target_size: int,
        nr_params: int,
        num_layers_out_fc: Optional[list] = None,
        dropout: float = 0.0,
        activation: str = "ReLU",
        **kwargs,
    ):
        super().__init__(**kwargs)

        # Defining parameters
        self.input_size = input_size
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.target_size = target_size
        self.nr_params = nr_params
        self.num_layers_out_fc = [] if num_layers_out_fc is None else num_layers_out_fc
        self.dropout = dropout
        self.activation = activation
        self.out_len = self.output_chunk_length

    @io_processor
    @abstractmethod
    def forward(self, x_in: tuple) -> torch.Tensor:
        pass


# TODO add batch norm
class _BlockRNNModule(CustomBlockRNNModule):
    def __init__(
        self,
        name: str,
        activation: Optional[str] = None,
        **kwargs,
    ):
        super().__init__(**kwargs)

        self.name = name

        # Defining the RNN module
        self.rnn = getattr(nn, self.name)(
            self.input_size,
            self.hidden_dim,
            self.num_layers,
            batch_first=True,
            dropout=self.dropout,
        )

        # The RNN module is followed by a fully connected layer, which maps the last hidden layer
        # to the output of desired length
        last = self.hidden_dim
        feats = []
        for index, feature in enumerate(
            self.num_layers_out_fc + [self.out_len * self.target_size * self.nr_params]
        ):
            feats.append(nn.Linear(last, feature))

            # Add activation only between layers, but not on the final layer
            if activation and index < len(self.num_layers_out_fc):
                activation_function = getattr(nn, activation)()
                feats.append(activation_function)
            last = feature
        self.fc = nn.Sequential(*feats)

    @io_processor
    def forward(self, x_in: tuple):
        x, _ = x_in
        # data is of size (batch_size, input_chunk_length, input_size)
        batch_size = x.size(0)

        out, hidden = self.rnn(x)

        """ Here, we apply the FC network only on the last output point (at the last time step)
        """
        if self.name == "LSTM":
            hidden = hidden[0]
        predictions = hidden[-1, :, :]
        predictions = self.fc(predictions)
        predictions = predictions.view(
            batch_size, self.out_len, self.target_size, self.nr_params
        )

        # predictions is of size (batch_size, output_chunk_length, 1)
        return predictions


def create_model():
    return _BlockRNNModule(
        name="GRU",
        activation="ReLU",
        input_size=3,
        hidden_dim=8,
        num_layers=2,
        target_size=2,
        nr_params=1,
        num_layers_out_fc=[6],
        dropout=0.1,
        input_chunk_length=5,
        output_chunk_length=3,
    )


model = torch.compile(create_model())


def make():
    torch.manual_seed(0)
    x = torch.randn(4, 5, 3)
    return create_model(), [((x, None),), ((x[:1], None),)]
