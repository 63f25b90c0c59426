"""GM505 negative: the wrapper's `try` runs a forward that loops over a slice of its layers, none of which break.

transformers' decoders loop `for decoder_layer in self.layers[: self.config.num_hidden_layers]`. The
comprehension closes over `self`, but nothing the `try` runs breaks, so Dynamo inlines the whole wrapper and
never compiles the comprehension's frame on its own. Nothing here may be flagged, and Dynamo must not break.
"""
from functools import wraps

import torch
from torch import nn


CAN_RECORD = {"hidden_states": 0}


class Config:
    num_hidden_layers = 2
    output_hidden_states = False


def capture_outputs(func):
    @wraps(func)
    def wrapper(self, *args, **kwargs):
        recordable = {f"output_{k}": getattr(self.config, f"output_{k}", False) for k in CAN_RECORD}
        collected = {k.replace("output_", ""): [] for k, v in recordable.items() if v}
        try:
            outputs = func(self, *args, **kwargs)
        finally:
            collected.clear()
        return outputs

    return wrapper


class DecoderLayer(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.mlp = nn.Linear(dim, dim)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        return hidden_states + self.mlp(hidden_states).relu()


class Model(nn.Module):
    def __init__(self, config: Config, dim: int = 4) -> None:
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList([DecoderLayer(dim) for _ in range(3)])

    @capture_outputs
    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        for decoder_layer in self.layers[: self.config.num_hidden_layers]:
            hidden_states = decoder_layer(hidden_states)
        return hidden_states


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Model(Config()), [(torch.randn(3, 4),)]


compiled = torch.compile(Model(Config()))

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
