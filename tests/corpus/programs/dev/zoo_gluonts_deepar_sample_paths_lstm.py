"""GluonTS DeepARModel.forward: unroll the lagged LSTM over the context, then draw sample paths step by step through `self.rnn(rnn_input, repeated_state)`.

Source: awslabs/gluonts@002b410500fe66573035400abcfc7e8e5ab829a0:src/gluonts/torch/model/deepar/module.py:35-355
Also: src/gluonts/torch/scaler.py:28-90 (MeanScaler), src/gluonts/torch/util.py
(lagged_sequence_values, slice_along_dim, unsqueeze_expand; at 2766109004's
version), src/gluonts/torch/modules/feature.py:20-48 (FeatureEmbedder).
Kept: the constructor's embedding_dimension default and LSTM sizing, the
_number_of_features property, unroll_lagged_rnn's scaler -> embedder ->
unsqueeze_expand -> lagged_sequence_values -> rnn chain with its tuple
return, forward's repeat_interleave of scale/static features/state/params,
output_distribution's trailing_n slicing and the sampling loop.
Simplified: StudentTOutput replaced by a tiny Normal output head (a Linear
projection to (loc, scale) and an affine-scaled Normal); lags [1, 2],
context 4, prediction 3, hidden 8, 4 parallel samples; no @validated.
"""
from dataclasses import dataclass
from typing import List, Optional, Tuple

import torch
import torch.nn as nn


@dataclass
class MeanScaler:
    dim: int = -1
    keepdim: bool = True
    default_scale: Optional[float] = None
    minimum_scale: float = 1e-10

    def __call__(
        self, data: torch.Tensor, observed_indicator: torch.Tensor
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        ts_sum = (data * observed_indicator).abs().sum(self.dim, keepdim=True)
        num_observed = observed_indicator.sum(self.dim, keepdim=True)

        scale = ts_sum / torch.clamp(num_observed, min=1)

        if self.default_scale is not None:
            batch_sum = ts_sum.sum(dim=0)
            batch_observations = torch.clamp(num_observed.sum(0), min=1)
            default_scale = torch.squeeze(batch_sum / batch_observations)
        else:
            default_scale = torch.Tensor(self.default_scale)

        scale = torch.where(
            num_observed > 0,
            scale,
            default_scale,
        )
        scale = torch.clamp(scale, min=self.minimum_scale)
        scaled_data = data / scale

        if not self.keepdim:
            scale = scale.squeeze(dim=self.dim)

        loc = torch.zeros_like(scale)
        return scaled_data, loc, scale


def slice_along_dim(a: torch.Tensor, dim: int, slice_: slice) -> torch.Tensor:
    idx = [slice(None)] * len(a.shape)
    idx[dim] = slice_
    return a[idx]


def unsqueeze_expand(a: torch.Tensor, dim: int, size: int) -> torch.Tensor:
    a = a.unsqueeze(dim)
    sizes = list(a.shape)
    sizes[dim] = size
    return a.expand(*sizes)


def lagged_sequence_values(
    indices: List[int],
    prior_sequence: torch.Tensor,
    sequence: torch.Tensor,
    dim: int,
) -> torch.Tensor:
    assert max(indices) <= prior_sequence.shape[dim], (
        f"lags cannot go further than prior sequence length, found lag"
        f" {max(indices)} while prior sequence is only"
        f" {prior_sequence.shape[dim]}-long"
    )

    full_sequence = torch.cat((prior_sequence, sequence), dim=dim)

    lags_values = []
    for lag_index in indices:
        begin_index = -lag_index - sequence.shape[dim]
        end_index = -lag_index if lag_index > 0 else None
        lags_values.append(
            slice_along_dim(
                full_sequence, dim=dim, slice_=slice(begin_index, end_index)
            )
        )

    return torch.stack(lags_values, dim=-1)


class FeatureEmbedder(nn.Module):
    def __init__(self, cardinalities: List[int], embedding_dims: List[int]) -> None:
        super().__init__()
        self._num_features = len(cardinalities)
        self._embedders = nn.ModuleList(
            [nn.Embedding(c, d) for c, d in zip(cardinalities, embedding_dims)]
        )

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        if self._num_features > 1:
            cat_feature_slices = torch.chunk(features, self._num_features, dim=-1)
        else:
            cat_feature_slices = [features]

        return torch.cat(
            [
                embed(cat_feature_slice.squeeze(-1))
                for embed, cat_feature_slice in zip(self._embedders, cat_feature_slices)
            ],
            dim=-1,
        )


class NormalArgProj(nn.Module):
    def __init__(self, in_features: int) -> None:
        super().__init__()
        self.proj = nn.Linear(in_features, 2)

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        out = self.proj(x)
        return out[..., 0], nn.functional.softplus(out[..., 1]) + 1e-3


class NormalOutput:
    event_shape: Tuple = ()

    def get_args_proj(self, in_features: int) -> nn.Module:
        return NormalArgProj(in_features)

    def distribution(self, distr_args, loc=None, scale=None) -> torch.distributions.Distribution:
        mu, sigma = distr_args
        if scale is not None:
            mu = mu * scale
            sigma = sigma * scale
        return torch.distributions.Normal(mu, sigma)


class DeepARModel(nn.Module):
    def __init__(
        self,
        context_length: int,
        prediction_length: int,
        num_feat_dynamic_real: int = 1,
        num_feat_static_real: int = 1,
        num_feat_static_cat: int = 1,
        cardinality: List[int] = [1],
        embedding_dimension: Optional[List[int]] = None,
        num_layers: int = 2,
        hidden_size: int = 40,
        dropout_rate: float = 0.1,
        distr_output=NormalOutput(),
        lags_seq: Optional[List[int]] = None,
        scaling: bool = True,
        default_scale: float = 0.0,
        num_parallel_samples: int = 100,
    ) -> None:
        super().__init__()

        assert distr_output.event_shape == ()
        assert len(cardinality) == num_feat_static_cat

        self.context_length = context_length
        self.prediction_length = prediction_length
        self.distr_output = distr_output
        self.param_proj = distr_output.get_args_proj(hidden_size)
        self.num_feat_dynamic_real = num_feat_dynamic_real
        self.num_feat_static_cat = num_feat_static_cat
        self.num_feat_static_real = num_feat_static_real
        self.embedding_dimension = (
            embedding_dimension
            if embedding_dimension is not None or cardinality is None
            else [min(50, (cat + 1) // 2) for cat in cardinality]
        )
        self.lags_seq = lags_seq or [1]
        self.num_parallel_samples = num_parallel_samples
        self.past_length = self.context_length + max(self.lags_seq)
        self.embedder = FeatureEmbedder(
            cardinalities=cardinality,
            embedding_dims=self.embedding_dimension,
        )
        self.scaler = MeanScaler(default_scale=default_scale)
        self.rnn_input_size = len(self.lags_seq) + self._number_of_features
        self.rnn = nn.LSTM(
            input_size=self.rnn_input_size,
            hidden_size=hidden_size,
            num_layers=num_layers,
            dropout=dropout_rate,
            batch_first=True,
        )

    @property
    def _number_of_features(self) -> int:
        return (
            sum(self.embedding_dimension)
            + self.num_feat_dynamic_real
            + self.num_feat_static_real
            + 1  # the log(scale)
        )

    def unroll_lagged_rnn(
        self,
        feat_static_cat: torch.Tensor,
        feat_static_real: torch.Tensor,
        past_time_feat: torch.Tensor,
        past_target: torch.Tensor,
        past_observed_values: torch.Tensor,
        future_time_feat: Optional[torch.Tensor] = None,
        future_target: Optional[torch.Tensor] = None,
    ):
        context = past_target[..., -self.context_length :]
        observed_context = past_observed_values[..., -self.context_length :]
        _, _, scale = self.scaler(context, observed_context)

        prior_input = past_target[..., : -self.context_length] / scale
        input = (
            torch.cat((context, future_target[..., :-1]), dim=-1) / scale
            if future_target is not None
            else context / scale
        )

        embedded_cat = self.embedder(feat_static_cat)
        static_feat = torch.cat(
            (embedded_cat, feat_static_real, scale.log()),
            dim=-1,
        )
        expanded_static_feat = unsqueeze_expand(
            static_feat, dim=-2, size=input.shape[-1]
        )

        time_feat = (
            torch.cat(
                (
                    past_time_feat[..., -self.context_length + 1 :, :],
                    future_time_feat,
                ),
                dim=-2,
            )
            if future_time_feat is not None
            else past_time_feat[..., -self.context_length + 1 :, :]
        )

        features = torch.cat((expanded_static_feat, time_feat), dim=-1)
        lags = lagged_sequence_values(self.lags_seq, prior_input, input, dim=-1)
        rnn_input = torch.cat((lags, features), dim=-1)

        output, new_state = self.rnn(rnn_input)

        params = self.param_proj(output)
        return params, scale, output, static_feat, new_state

    def output_distribution(self, params, scale=None, trailing_n=None):
        sliced_params = params
        if trailing_n is not None:
            sliced_params = [p[:, -trailing_n:] for p in params]
        return self.distr_output.distribution(sliced_params, scale=scale)

    def forward(
        self,
        feat_static_cat: torch.Tensor,
        feat_static_real: torch.Tensor,
        past_time_feat: torch.Tensor,
        past_target: torch.Tensor,
        past_observed_values: torch.Tensor,
        future_time_feat: torch.Tensor,
        num_parallel_samples: Optional[int] = None,
    ) -> torch.Tensor:
        if num_parallel_samples is None:
            num_parallel_samples = self.num_parallel_samples

        params, scale, _, static_feat, state = self.unroll_lagged_rnn(
            feat_static_cat,
            feat_static_real,
            past_time_feat,
            past_target,
            past_observed_values,
            future_time_feat[:, :1],
        )

        repeated_scale = scale.repeat_interleave(repeats=num_parallel_samples, dim=0)
        repeated_static_feat = static_feat.repeat_interleave(
            repeats=num_parallel_samples, dim=0
        ).unsqueeze(dim=1)
        repeated_past_target = (
            past_target.repeat_interleave(repeats=num_parallel_samples, dim=0)
            / repeated_scale
        )
        repeated_time_feat = future_time_feat.repeat_interleave(
            repeats=num_parallel_samples, dim=0
        )
        repeated_state = [
            s.repeat_interleave(repeats=num_parallel_samples, dim=1) for s in state
        ]

        repeated_params = [
            s.repeat_interleave(repeats=num_parallel_samples, dim=0) for s in params
        ]
        distr = self.output_distribution(
            repeated_params, trailing_n=1, scale=repeated_scale
        )
        next_sample = distr.sample()
        future_samples = [next_sample]

        for k in range(1, self.prediction_length):
            scaled_next_sample = next_sample / repeated_scale
            next_features = torch.cat(
                (repeated_static_feat, repeated_time_feat[:, k : k + 1]),
                dim=-1,
            )
            next_lags = lagged_sequence_values(
                self.lags_seq, repeated_past_target, scaled_next_sample, dim=-1
            )
            rnn_input = torch.cat((next_lags, next_features), dim=-1)

            output, repeated_state = self.rnn(rnn_input, repeated_state)

            repeated_past_target = torch.cat(
                (repeated_past_target, scaled_next_sample), dim=1
            )

            params = self.param_proj(output)
            distr = self.output_distribution(params, scale=repeated_scale)
            next_sample = distr.sample()
            future_samples.append(next_sample)

        future_samples_concat = torch.cat(future_samples, dim=1)

        return future_samples_concat.reshape(
            (-1, num_parallel_samples, self.prediction_length)
        )


def build_model() -> DeepARModel:
    return DeepARModel(
        context_length=4,
        prediction_length=3,
        cardinality=[3],
        hidden_size=8,
        lags_seq=[1, 2],
        num_parallel_samples=4,
    )


predictor = torch.compile(build_model().eval())


def make():
    torch.manual_seed(0)
    batch, past_length = 2, 6
    feat_static_cat = torch.tensor([[0], [2]])
    feat_static_real = torch.randn(batch, 1)
    past_time_feat = torch.randn(batch, past_length, 1)
    past_target = torch.rand(batch, past_length) * 5
    observed = torch.ones(batch, past_length)
    observed_gap = observed.clone()
    observed_gap[1, -4:] = 0.0
    future_time_feat = torch.randn(batch, 3, 1)
    args = (feat_static_cat, feat_static_real, past_time_feat, past_target)
    return build_model().eval(), [
        args + (observed, future_time_feat),
        args + (observed_gap, future_time_feat),
    ]
