"""GM501 bad: recurrent layers stored under a name and read back by key or index.

A `ModuleDict` keyed by direction, a layer stored with `add_module`, one stored with `setattr`,
and an item of a `ModuleList` built from a list: each is an `nn.GRU` / `nn.LSTM`, which Dynamo
refuses where it first reads it (GB0014, measured on torch 2.13), and it runs that function
eagerly. The unsafe fix sets `torch._dynamo.config.allow_rnn = True`.
"""
import torch
from torch import nn


class DirectionalEncoder(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.rnns = nn.ModuleDict({"fwd": nn.GRU(dim, dim, batch_first=True)})
        self.add_module("post", nn.LSTM(dim, dim, batch_first=True))
        setattr(self, "refine", nn.GRU(dim, dim, batch_first=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.rnns["fwd"](x)
        return y


class PostEncoder(DirectionalEncoder):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.post(x)
        z, _ = self.refine(x)
        return y + z


class Stack(nn.Module):
    def __init__(self, dim: int = 4, depth: int = 2) -> None:
        super().__init__()
        layers = [nn.LSTM(dim, dim, batch_first=True) for _ in range(depth)]
        self.layers = nn.ModuleList(layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers[0](x)[0]


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = DirectionalEncoder()
        self.post = PostEncoder()
        self.stack = Stack()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x) + self.post(x) + self.stack(x)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Model(), [(torch.randn(2, 3, 4),)]


model = torch.compile(Model())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
