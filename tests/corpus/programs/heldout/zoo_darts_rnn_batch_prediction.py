"""Darts RNNModel: `_get_batch_prediction` rolls an LSTM forward one step at a time (`while prediction_length < n`), feeding back `out[:, -1:, :]` and the last hidden state through `_produce_predict_output` and the `io_processor`-wrapped forward.

Source: unit8co/darts@056187fb5fd8d2f6ac12aa06bacf30d22c4f3a7c:darts/models/forecasting/rnn_model.py:24-242
Also: darts/models/forecasting/pl_forecasting_module.py (io_processor, the
likelihood/predict_likelihood_parameters attributes of PLForecastingModule).
Kept: CustomRNNModule's attributes, _produce_predict_output, _get_batch_prediction
and _RNNModule (getattr(nn, name) RNN, V projection, view) verbatim.
Simplified: the Lightning base class is a plain nn.Module holding the attributes
the code reads; io_processor keeps only its no-RINorm path; the compiled entry is a
predict_batch(module, n, batch) stand-in for PLForecastingModule.predict_step;
hidden_dim 8, 1 target, 2 covariates.
"""
from abc import ABC, abstractmethod
from functools import wraps
from typing import Optional, Tuple

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


class PLForecastingModule(nn.Module):
    def __init__(self, input_chunk_length=None, output_chunk_length=None, likelihood=None,
                 use_reversible_instance_norm=False):
        super().__init__()
        self.input_chunk_length = input_chunk_length
        self.output_chunk_length = output_chunk_length
        self.likelihood = likelihood
        self.predict_likelihood_parameters = False
        self.use_reversible_instance_norm = use_reversible_instance_norm


class CustomRNNModule(PLForecastingModule, ABC):
    def __init__(
        self,
        input_size: int,
        hidden_dim: int,
        num_layers: int,
        target_size: int,
        nr_params: int,
        dropout: float = 0.0,
        **kwargs,
    ):
        # RNNModule doesn't really need input and output_chunk_length for PLModule
        super().__init__(**kwargs)

        # Defining parameters
        self.input_size = input_size
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.target_size = target_size
        self.nr_params = nr_params
        self.dropout = dropout

    @io_processor
    @abstractmethod
    def forward(
        self, x_in: Tuple, h: Optional[torch.Tensor] = None
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        pass

    def _produce_predict_output(
        self, x: Tuple, last_hidden_state: Optional[torch.Tensor] = None
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """overwrite parent classes `_produce_predict_output` method"""
        output, hidden = self(x, last_hidden_state)
        if self.likelihood:
            if self.predict_likelihood_parameters:
                return self.likelihood.predict_likelihood_parameters(output), hidden
            else:
                return self.likelihood.sample(output), hidden
        else:
            return output.squeeze(dim=-1), hidden

    def _get_batch_prediction(
        self, n: int, input_batch: Tuple, roll_size: int
    ) -> torch.Tensor:
        """
        This model is recurrent, so we have to write a specific way to
        obtain the time series forecasts of length n.
        """
        (
            past_target,
            historic_future_covariates,
            future_covariates,
            static_covariates,
        ) = input_batch

        if historic_future_covariates is not None:
            # RNNs need as inputs (target[t] and covariates[t+1]) so here we shift the covariates
            all_covariates = torch.cat(
                [historic_future_covariates[:, 1:, :], future_covariates], dim=1
            )
            cov_past, cov_future = (
                all_covariates[:, : past_target.shape[1], :],
                all_covariates[:, past_target.shape[1] :, :],
            )
            input_series = torch.cat([past_target, cov_past], dim=2)
        else:
            input_series = past_target
            cov_future = None

        batch_prediction = []
        out, last_hidden_state = self._produce_predict_output(
            (input_series, static_covariates)
        )
        batch_prediction.append(out[:, -1:, :])
        prediction_length = 1

        while prediction_length < n:

            # create new input to model from last prediction and current covariates, if available
            new_input = (
                torch.cat(
                    [
                        out[:, -1:, :],
                        cov_future[:, prediction_length - 1 : prediction_length, :],
                    ],
                    dim=2,
                )
                if cov_future is not None
                else out[:, -1:, :]
            )

            # feed new input to model, including the last hidden state from the previous iteration
            out, last_hidden_state = self._produce_predict_output(
                (new_input, static_covariates), last_hidden_state
            )

            # append prediction to batch prediction array, increase counter
            batch_prediction.append(out[:, -1:, :])
            prediction_length += 1

        # bring predictions into desired format and drop unnecessary values
        batch_prediction = torch.cat(batch_prediction, dim=1)
        batch_prediction = batch_prediction[:, :n, :]
        return batch_prediction


# TODO add batch norm
class _RNNModule(CustomRNNModule):
    def __init__(
        self,
        name: str,
        **kwargs,
    ):
        # RNNModule doesn't really need input and output_chunk_length for PLModule
        super().__init__(**kwargs)
        self.name = name

        # Defining the RNN module
        self.rnn = getattr(nn, name)(
            self.input_size,
            self.hidden_dim,
            self.num_layers,
            batch_first=True,
            dropout=self.dropout,
        )

        # The RNN module needs a linear layer V that transforms hidden states into outputs, individually
        self.V = nn.Linear(self.hidden_dim, self.target_size * self.nr_params)

    @io_processor
    def forward(
        self, x_in: Tuple, h: Optional[torch.Tensor] = None
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        x, _ = x_in
        # data is of size (batch_size, input_length, input_size)
        batch_size = x.shape[0]

        # out is of size (batch_size, input_length, hidden_dim)
        out, last_hidden_state = self.rnn(x) if h is None else self.rnn(x, h)

        # Here, we apply the V matrix to every hidden state to produce the outputs
        predictions = self.V(out)

        # predictions is of size (batch_size, input_length, target_size)
        predictions = predictions.view(batch_size, -1, self.target_size, self.nr_params)

        # returns outputs for all inputs, only the last one is needed for prediction time
        return predictions, last_hidden_state


def predict_batch(module, n, input_batch, roll_size=1):
    module.eval()
    with torch.no_grad():
        return module._get_batch_prediction(n, input_batch, roll_size)


compiled_predict_batch = torch.compile(predict_batch)


def make():
    torch.manual_seed(0)
    with_covs = _RNNModule(
        name="LSTM", input_size=3, hidden_dim=8, num_layers=1, target_size=1, nr_params=1,
        input_chunk_length=6, output_chunk_length=1,
    )
    target_only = _RNNModule(
        name="LSTM", input_size=1, hidden_dim=8, num_layers=1, target_size=1, nr_params=1,
        input_chunk_length=6, output_chunk_length=1,
    )
    past_target = torch.randn(2, 6, 1)
    historic = torch.randn(2, 6, 2)
    future = torch.randn(2, 3, 2)
    return predict_batch, [
        (with_covs, 3, (past_target, historic, future, None)),
        (target_only, 1, (past_target, None, None, None)),
    ]
