"""`out, _ = self.lstm(x)` with `torch.compile(model, fullgraph=True)` raises Unsupported.

Source: https://github.com/pytorch/pytorch/issues/171853
Kept: the minimal MyModel verbatim and the fullgraph compile.
Simplified: nothing.
"""
import torch
import torch.nn as nn


class MyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(10, 5, batch_first=True)
    def forward(self, x):
        out, _ = self.lstm(x)
        return out


model = MyModel()
compiled_model = torch.compile(model, fullgraph=True)


def make():
    torch.manual_seed(0)
    return MyModel(), [(torch.randn(2, 3, 10),)]
