"""GluonTS SimpleFeedForwardModel: mean-abs scaling, an MLP built in a loop, and a StudentT ArgProj whose domain_map clamps with torch.finfo (no break expected).

Source: awslabs/gluonts@10eb04df525330be0332a45b702e2a69d1ba817f:src/gluonts/torch/model/simple_feedforward/module.py:23-87
Also: src/gluonts/torch/modules/distribution_output.py:38-101 (ArgProj, Output,
at 01847dd1081338d519d92c510bd0b331b761e197), StudentTOutput.domain_map and
LambdaLayer from the same package.
Kept: mean_abs_scaling, the name-mangled __make_lin static method, the
optional BatchNorm in the layer loop, the reshape to (-1, prediction_length,
hidden) and the args_proj -> LambdaLayer(domain_map) call chain with its
tuple return.
Simplified: no @validated, dtype/prefix plumbing of ArgProj dropped;
context 8, hidden [16, 4], prediction 3.
"""
from typing import Callable, Dict, List, Tuple

import torch
import torch.nn.functional as F
from torch import nn


class LambdaLayer(nn.Module):
    def __init__(self, function):
        super().__init__()
        self._func = function

    def forward(self, x, *args):
        return self._func(x, *args)


class ArgProj(nn.Module):
    def __init__(
        self,
        in_features: int,
        args_dim: Dict[str, int],
        domain_map: Callable[..., Tuple[torch.Tensor]],
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.args_dim = args_dim
        self.proj = nn.ModuleList(
            [nn.Linear(in_features, dim) for dim in args_dim.values()]
        )
        self.domain_map = domain_map

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor]:
        params_unbounded = [proj(x) for proj in self.proj]

        return self.domain_map(*params_unbounded)


class Output:
    args_dim: Dict[str, int]

    def get_args_proj(self, in_features: int) -> nn.Module:
        return ArgProj(
            in_features=in_features,
            args_dim=self.args_dim,
            domain_map=LambdaLayer(self.domain_map),
        )

    def domain_map(self, *args: torch.Tensor):
        raise NotImplementedError()


class StudentTOutput(Output):
    args_dim: Dict[str, int] = {"df": 1, "loc": 1, "scale": 1}
    distr_cls: type = torch.distributions.StudentT

    @classmethod
    def domain_map(cls, df: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor):
        epsilon = torch.finfo(scale.dtype).eps
        scale = F.softplus(scale).clamp_min(epsilon)
        df = 2.0 + F.softplus(df)
        return df.squeeze(-1), loc.squeeze(-1), scale.squeeze(-1)


def mean_abs_scaling(seq, min_scale=1e-5):
    return seq.abs().mean(1).clamp(min_scale, None).unsqueeze(1)


class SimpleFeedForwardModel(nn.Module):
    def __init__(
        self,
        freq: str,
        prediction_length: int,
        context_length: int,
        hidden_dimensions: List[int],
        distr_output=StudentTOutput(),
        batch_norm: bool = False,
    ) -> None:
        super().__init__()

        assert prediction_length > 0
        assert context_length > 0
        assert len(hidden_dimensions) > 0

        self.freq = freq
        self.prediction_length = prediction_length
        self.context_length = context_length
        self.hidden_dimensions = hidden_dimensions
        self.distr_output = distr_output
        self.batch_norm = batch_norm

        dimensions = [context_length] + hidden_dimensions[:-1]

        modules = []
        for in_size, out_size in zip(dimensions[:-1], dimensions[1:]):
            modules += [self.__make_lin(in_size, out_size), nn.ReLU()]
            if batch_norm:
                modules.append(nn.BatchNorm1d(out_size))
        modules.append(
            self.__make_lin(dimensions[-1], prediction_length * hidden_dimensions[-1])
        )

        self.nn = nn.Sequential(*modules)
        self.args_proj = self.distr_output.get_args_proj(hidden_dimensions[-1])

    @staticmethod
    def __make_lin(dim_in, dim_out):
        lin = nn.Linear(dim_in, dim_out)
        torch.nn.init.uniform_(lin.weight, -0.07, 0.07)
        torch.nn.init.zeros_(lin.bias)
        return lin

    def forward(
        self,
        context: torch.Tensor,
    ) -> Tuple[Tuple[torch.Tensor, ...], torch.Tensor, torch.Tensor]:
        scale = mean_abs_scaling(context)
        scaled_context = context / scale
        nn_out = self.nn(scaled_context)
        nn_out_reshaped = nn_out.reshape(
            -1, self.prediction_length, self.hidden_dimensions[-1]
        )
        distr_args = self.args_proj(nn_out_reshaped)
        return distr_args, torch.zeros_like(scale), scale


def build(batch_norm: bool) -> SimpleFeedForwardModel:
    return SimpleFeedForwardModel(
        freq="H",
        prediction_length=3,
        context_length=8,
        hidden_dimensions=[16, 4],
        batch_norm=batch_norm,
    )


model = torch.compile(build(batch_norm=True))


def make():
    torch.manual_seed(0)
    return build(batch_norm=True), [(torch.randn(4, 8),), (torch.zeros(2, 8),)]
