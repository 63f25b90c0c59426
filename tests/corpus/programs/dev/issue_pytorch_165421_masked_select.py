"""`x.masked_select(x.ge(0.5))` in a module is rejected as a dynamic shape operator under fullgraph.

Source: https://github.com/pytorch/pytorch/issues/165421
Kept: MyModel.forward, GetInput's shape, `torch.compile(model, fullgraph=True)` and the no_grad eval call.
Simplified: CPU instead of `.cuda()` (the reporter notes CPU repros too); timing code dropped.
"""
import torch
from torch import nn


class MyModel(nn.Module):
    def forward(self, x):
        mask = x.ge(0.5)          # boolean mask
        return x.masked_select(mask)


def GetInput():
    return torch.rand(3, 4, dtype=torch.float32)


def main():
    model = MyModel().eval()
    compiled = torch.compile(model, fullgraph=True)
    with torch.no_grad():
        return compiled(GetInput())


def make():
    torch.manual_seed(0)
    return MyModel().eval(), [(GetInput(),)]
