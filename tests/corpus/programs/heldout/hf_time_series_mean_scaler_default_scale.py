"""Time Series Transformer MeanScaler: per-series scale with `torch.where(num_observed > 0, scale, default_scale)`, config read via hasattr defaults (no break).

Source: huggingface/transformers@v5.23.0:src/transformers/models/time_series_transformer/modeling_time_series_transformer.py:117-168
Kept: TimeSeriesMeanScaler verbatim (hasattr config plumbing, batch default
scale vs configured default_scale, clamp, keepdim squeeze, tuple return) and
the way the model calls it on past_values with past_observed_mask.
Simplified: the model after scaling is a linear projection.
"""
import torch
from torch import nn


class TimeSeriesTransformerConfig:
    scaling_dim = 1
    keepdim = True
    minimum_scale = 1e-10


class TimeSeriesMeanScaler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dim = config.scaling_dim if hasattr(config, "scaling_dim") else 1
        self.keepdim = config.keepdim if hasattr(config, "keepdim") else True
        self.minimum_scale = config.minimum_scale if hasattr(config, "minimum_scale") else 1e-10
        self.default_scale = config.default_scale if hasattr(config, "default_scale") else None

    def forward(self, data, observed_indicator):
        ts_sum = (data * observed_indicator).abs().sum(self.dim, keepdim=True)
        num_observed = observed_indicator.sum(self.dim, keepdim=True)

        scale = ts_sum / torch.clamp(num_observed, min=1)

        if self.default_scale is None:
            batch_sum = ts_sum.sum(dim=0)
            batch_observations = torch.clamp(num_observed.sum(0), min=1)
            default_scale = torch.squeeze(batch_sum / batch_observations)
        else:
            default_scale = self.default_scale * torch.ones_like(scale)

        scale = torch.where(num_observed > 0, scale, default_scale)

        scale = torch.clamp(scale, min=self.minimum_scale)
        scaled_data = data / scale

        if not self.keepdim:
            scale = scale.squeeze(dim=self.dim)

        return scaled_data, torch.zeros_like(scale), scale


class Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.scaler = TimeSeriesMeanScaler(config)
        self.proj = nn.Linear(1, 4)

    def forward(self, past_values, past_observed_mask):
        context, loc, scale = self.scaler(past_values, past_observed_mask)
        return self.proj(context), loc, scale


def make():
    torch.manual_seed(0)
    values = torch.randn(3, 6, 1)
    observed = torch.ones(3, 6, 1)
    observed[1] = 0.0
    return Model(TimeSeriesTransformerConfig()), [(values, observed)]


def fit(config, batches):
    model = torch.compile(Model(config))
    return [model(v, m) for v, m in batches]
