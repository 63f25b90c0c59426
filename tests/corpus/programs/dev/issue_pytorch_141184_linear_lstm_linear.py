"""Linear -> LSTM -> Linear: the RNN break keeps the post-LSTM Linear from compiling.

Source: https://github.com/pytorch/pytorch/issues/141184 (the maintainer's reproduction in the thread)
Kept: the three-stage model and `torch.compile(model, backend=counting_backend)`.
Simplified: sizes 128/256/10 -> 8/6/3, two LSTM layers kept.
"""
import torch
from torch import nn

graphs = []


def counting_backend(gm, example_inputs):
    graphs.append(gm)
    return gm.forward


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pre = nn.Linear(8, 8)
        self.lstm = nn.LSTM(8, 6, num_layers=2)
        self.post = nn.Linear(6, 3)

    def forward(self, x):
        x = self.pre(x)
        x, _ = self.lstm(x)
        return self.post(x)


compiled = torch.compile(Model(), backend=counting_backend)


def make():
    torch.manual_seed(0)
    return Model(), [(torch.randn(4, 2, 8),)]
