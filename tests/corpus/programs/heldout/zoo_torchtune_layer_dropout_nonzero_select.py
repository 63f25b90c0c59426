"""torchtune LayerDropout: a Bernoulli draw per batch row, `(skip == 0).nonzero().squeeze()` selects the kept rows, and `ind_selected.numel() > 0` guards the wrapped layer.

Source: pytorch/torchtune@bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1:torchtune/modules/layer_dropout.py:14-160,163-210,213-290
Also: torchtune/modules/common_utils.py:62-120 (slice_str_to_array).
Kept: LayerDropout.forward as written (generator with per-layer seed, the
`inferred` attribute, the dim-0 assert), ModuleLayerDropoutWrapper with its
attribute forwarding, ScaleType/get_scale and prepare_layer_dropout wrapping
the model's layers in place.
Simplified: the decoder layers are residual MLP blocks standing in for
TransformerSelfAttentionLayer; slice_str_to_array keeps the comma form only;
the recipe's compile is a whole-model `model.compile()`; 3 layers of width 8.
"""
import math
from enum import Enum
from typing import Any, Callable, Iterable, Optional, Union

import torch
from torch import nn


def slice_str_to_array(slice_str: str, length: int) -> list[bool]:
    """Convert a string representing a Python index list into a boolean array."""
    assert "," not in slice_str or ":" not in slice_str, "Cannot mix commas and colons"
    indices = [int(i) for i in slice_str.split(",")]
    assert all(0 <= i < length for i in indices), "Index out of range"
    result = [False] * length
    for i in indices:
        result[i] = True
    return result


class LayerDropout(torch.nn.Module):
    """Applies layer dropout to the input tensor of an underlying module."""

    def __init__(
        self,
        prob: float = 0.0,
        dim: Optional[int] = 0,
        disable_on_eval: Optional[bool] = True,
        seed: Optional[int] = None,
    ):
        super().__init__()
        self.prob: float = prob
        self.dim = dim
        self.disable_on_eval: bool = disable_on_eval
        self.generator = torch.Generator(device="cpu")
        self.inferred: float = None

        if seed is not None:
            self.generator.manual_seed(seed)

    def forward(
        self,
        function: Union[Callable, torch.nn.Module],
        input: torch.Tensor,
        *args,
        **kwargs,
    ) -> torch.Tensor:
        n = input.shape[self.dim]

        if self.prob == 0 or (self.disable_on_eval and self.training is False):
            self.inferred = 1.0
            return function(input, *args, **kwargs)

        skip = (
            torch.bernoulli(torch.Tensor((n) * [self.prob]), generator=self.generator)
            .to(input.device)
            .to(input.dtype)
        )
        self.inferred = 1 - torch.mean(skip)
        ind_selected = (skip == 0).nonzero().squeeze()

        if ind_selected.numel() > 0:
            x_selected = torch.index_select(input, self.dim, ind_selected)
            out_selected = function(x_selected, *args, **kwargs)

        out = input.clone()
        assert (
            self.dim == 0
        ), "Currently only supporting dropping elements along the 0th dimension"
        if ind_selected.numel() > 0:
            out[ind_selected] = out_selected
        return out


class ModuleLayerDropoutWrapper(torch.nn.Module):
    """A wrapper module that adds layer dropout functionality to a given module."""

    def __init__(self, module: torch.nn.Module, dropout: LayerDropout):
        super().__init__()
        self.module = module
        self.dropout = dropout

    def forward(self, input: torch.Tensor, *args, **kwargs):
        return self.dropout(self.module, input, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        """Forward missing attributes to wrapped module."""
        try:
            return super().__getattr__(name)  # defer to nn.Module's logic
        except AttributeError:
            return getattr(self.module, name)  # fallback to wrapped module

    def __getitem__(self, key: int) -> Any:
        """Forward indexing calls in case the module is a nn.Sequential."""
        return self.module.__getitem__(key)


class ScaleType(str, Enum):
    UNIFORM = "uniform"
    EXP = "exp"
    LINEAR = "linear"
    LOG = "log"
    SIN = "sin"
    SIGMOID = "sigmoid"
    STEP = "step"


def get_scale(scale_type: ScaleType, scale_period: int, val: int) -> float:
    """Scaling factor: 0 when val is 0, 1 when val reaches scale_period."""
    if scale_period == 0:
        return 1.0
    if val >= scale_period:
        return 1.0

    # all the equations below aim to make scale = 0 when val=0, and scale = 1 when val=scale_period
    scale = {
        ScaleType.UNIFORM: 1.0,
        ScaleType.EXP: math.pow(2, val / scale_period) - 1,
        ScaleType.LINEAR: val / scale_period,
        ScaleType.LOG: math.log(val + 1, scale_period + 1),
        ScaleType.SIN: math.sin(0.5 * math.pi * val / scale_period),
        ScaleType.SIGMOID: 1 / (1 + math.exp(-10 * (val / scale_period - 0.5))),
    }[scale_type]

    # ensure returned scale is between 0.0 and 1.0 (inclusive)
    return max(min(scale, 1.0), 0.0)


def prepare_layer_dropout(
    layers: Union[torch.nn.ModuleList, Iterable[torch.nn.Module]],
    prob_max: float = 0.0,
    prob_layer_scale: Optional[ScaleType] = ScaleType.UNIFORM,
    layers_str: Optional[str] = None,
    disable_on_eval: Optional[bool] = True,
) -> None:
    """Wrap each layer in place with a ModuleLayerDropoutWrapper."""
    num_layers = len(layers)
    has_dropout = (
        slice_str_to_array(layers_str, num_layers)
        if layers_str
        else [True] * num_layers
    )
    for layer_id in range(len(layers)):
        prob = (
            prob_max
            * get_scale(
                scale_type=prob_layer_scale,
                scale_period=num_layers - 1,
                val=layer_id,
            )
            if has_dropout[layer_id]
            else 0.0
        )
        assert (
            prob >= 0.0 and prob <= prob_max
        ), f"prob={prob} should be between 0 and {prob_max}"
        # We would like each layer to have a different seed, so that we don't have the same samples skipped across layers.
        # Hence, we use the layer_id as a seed for each layer's dropout.
        layer_dropout = LayerDropout(prob, disable_on_eval=disable_on_eval, seed=layer_id)

        layers[layer_id] = ModuleLayerDropoutWrapper(layers[layer_id], layer_dropout)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.RMSNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.SiLU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class TinyDecoder(nn.Module):
    def __init__(self, vocab=16, dim=8, num_layers=3):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Block(dim) for _ in range(num_layers)])
        self.norm = nn.RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h)
        return self.output(self.norm(h))


def setup_model(layer_dropout_cfg):
    model = TinyDecoder()
    if layer_dropout_cfg:
        prepare_layer_dropout(
            model.layers,
            prob_max=layer_dropout_cfg.get("prob", 0.5),
            prob_layer_scale=layer_dropout_cfg.get("prob_layer_scale", "uniform"),
            layers_str=layer_dropout_cfg.get("layers", None),
            disable_on_eval=layer_dropout_cfg.get("disable_on_eval", True),
        )
    model.compile()
    return model


def make():
    torch.manual_seed(0)
    model = TinyDecoder()
    prepare_layer_dropout(model.layers, prob_max=0.6, prob_layer_scale=ScaleType.LINEAR, layers_str="1,2")
    tokens = torch.randint(0, 16, (4, 5))
    return model, [(tokens,), (tokens[:1],), (tokens[:, :3],)]
