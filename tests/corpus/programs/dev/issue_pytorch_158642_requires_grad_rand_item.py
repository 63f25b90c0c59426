"""Perceptron whose forward sets `requires_grad_(torch.rand(1).item() > 0.5)` on a clone of its input.

Source: pytorch/pytorch#158642 (https://github.com/pytorch/pytorch/issues/158642)
Kept: Perceptron verbatim (clone().requires_grad_(random .item() comparison), Linear, sigmoid) and
`torch.compile(model, fullgraph=True)`.
Simplified: the reporter's training loop (BCELoss().half(), optimizer) is dropped; the forward is what
fails to compile.
"""
import torch
import torch.nn as nn


class Perceptron(nn.Module):
    def __init__(self, input_dim, output_dim=1):
        super().__init__()
        self.linear = nn.Linear(input_dim, output_dim)

    def forward(self, x):
        x = x.clone().requires_grad_(torch.rand(1).item() > 0.5)
        return torch.sigmoid(self.linear(x))


model = Perceptron(input_dim=2)
compiled_model = torch.compile(model, fullgraph=True)


def make():
    torch.manual_seed(0)
    X = torch.randn(8, 2)
    return Perceptron(input_dim=2), [(X,)]
