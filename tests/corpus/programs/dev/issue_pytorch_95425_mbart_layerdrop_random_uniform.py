"""MBart-style layer drop: `random.uniform(0, 1) < self.layerdrop` decides per layer whether to `continue`.

Source: pytorch/pytorch#95425 (https://github.com/pytorch/pytorch/issues/95425)
The reporter's minimal repro "inspired by MBartForConditionalGeneration": Dynamo evaluates the random
number while tracing, so each compiled run replays the first dice rolls.
Kept: MyModule/ToyModel as posted (pre Sequential, a plain Python list of layers, tail Sequential,
layerdrop = 0.5, the `continue` in the loop), the CompileCounter + torch._dynamo.optimize entry.
Simplified: widths 10000/1000 -> 32/16, batch 20 -> 4.
"""
import random

import torch
import torch._dynamo.testing
from torch import nn


class MyModule(torch.nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(a, b),
            nn.ReLU(),
        )

    def forward(self, x):
        return self.net(x)


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.pre = nn.Sequential(
            *[nn.Linear(10, 32), nn.ReLU()]
            + [nn.Linear(32, 32), nn.ReLU()]
            + [MyModule(32, 32)]
            + [MyModule(32, 16)]
        )

        self.layers = [
            MyModule(16, 16),
            MyModule(16, 16),
            MyModule(16, 16),
            MyModule(16, 16),
            MyModule(16, 16),
            MyModule(16, 16),
        ]

        self.tail = nn.Sequential(
            *[nn.Linear(16, 5)]
        )

        self.layerdrop = 0.5

    def forward(self, x):
        hidden_state = self.pre(x)
        for layer in self.layers:

            dropout_probability = random.uniform(0, 1)

            if dropout_probability < self.layerdrop:
                continue

            hidden_state = layer(hidden_state)

        hidden_state = self.tail(hidden_state)
        return hidden_state


def main():
    m = ToyModel()
    inputs = (torch.randn(20, 10),)
    cnt = torch._dynamo.testing.CompileCounter()
    opt_m = torch._dynamo.optimize(cnt)(m)
    out = opt_m(*inputs)
    assert cnt.frame_count == 1, "captured a full graph on the first try"
    out = opt_m(*inputs)
    return out


def make():
    torch.manual_seed(0)
    return ToyModel(), [(torch.randn(4, 10),), (torch.randn(4, 10),)]
