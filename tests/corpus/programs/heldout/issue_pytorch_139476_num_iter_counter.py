"""A module that bumps a Python counter `self.num_iter += 1` in forward while the training loop toggles
`requires_grad` of one layer between calls (a guard bug, not a graph break).

Source: https://github.com/pytorch/pytorch/issues/139476
Kept: MyModule.forward verbatim, `adjust_model`, `model = torch.compile(model)` and the loop shape.
Simplified: hidden size 1024 -> 8, CPU, two iterations.
"""
import torch
import torch.nn as nn


def adjust_model(model):
    to_freeze = model.num_iter % 2 == 0
    if to_freeze:
        for param in model.layer2.parameters():
            param.requires_grad = False
    else:
        for param in model.layer2.parameters():
            param.requires_grad = True


class MyModule(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(MyModule, self).__init__()

        self.layer1 = nn.Linear(hidden_size, hidden_size)
        self.layer2 = nn.Linear(hidden_size, hidden_size)

        self.num_iter = 0

    def forward(self, x):
        x = self.layer2(x + self.layer1.bias)

        self.num_iter += 1
        return x


def train(features):
    model = MyModule(8, 8, 1)
    model = torch.compile(model)
    for _ in range(2):
        adjust_model(model)
        model(features).sum().backward()


def make():
    torch.manual_seed(0)
    return MyModule(8, 8, 1), [(torch.randn(4, 8),)]
