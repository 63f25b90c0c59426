"""A tiny training step with three classic graph breaks (try `graphmend-lint examples/`)."""

import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        print("hidden", h.shape)  # I/O: Dynamo splits the graph here
        if h.mean() > 0:  # a branch on a tensor's value: another split
            h = h * 2
        else:
            h = h - 1
        return h


model = torch.compile(Gate())

if __name__ == "__main__":
    print(model(torch.randn(4, 16)).shape)
