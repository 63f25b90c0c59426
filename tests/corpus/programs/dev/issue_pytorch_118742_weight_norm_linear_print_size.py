"""Model with a legacy `nn.utils.weight_norm(nn.Linear)` layer and a `print(..., inp1.size())` in forward.

Source: pytorch/pytorch#118742 (https://github.com/pytorch/pytorch/issues/118742)
Kept: the reporter's `Model` (`self.lin = nn.utils.weight_norm(self.lin, dim=0)`, the
`print("inp1 size :", inp1.size())` line, `self.lin(inp1)`) and the
`torch.compile(model)(*inputs)` entry on a CPU model.
Simplified: nothing (a second, batched input set added).
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(10, 30)
        self.lin = nn.utils.weight_norm(self.lin, dim=0)

    def forward(self, inp1):
        print("inp1 size :", inp1.size())
        out = self.lin(inp1)
        return out


def run_compiled(inputs):
    model = Model().to(torch.device("cpu"))
    return torch.compile(model)(*inputs)


def make():
    torch.manual_seed(0)
    model = Model().to(torch.device("cpu"))
    return model, [(torch.randn(10),), (torch.randn(4, 10),)]
