"""LoRA-style block (frozen linear plus trainable linear) compiled per layer, as torchtune does: the first block sees an input without grad, the next one an input that requires grad.

Source: https://github.com/pytorch/pytorch/issues/141039
Kept: the report's SimpleLayer (linear_1 frozen by setting `requires_grad = False`
on its parameters, linear_2 trainable), a stack of them run in a loop, and
compilation of each block on its own (`layer.compile()`, like torchtune's
`training/_compile.py`), so the second block's input differs only in
requires_grad.
Simplified: the cut-off end of the excerpt is completed with a ReLU between
the two linears and a summed output; dim 8, two blocks.
"""
import torch
import torch.nn as nn


# Define a simple layer class
class SimpleLayer(nn.Module):
    def __init__(self, input_dim):
        super(SimpleLayer, self).__init__()
        # frozen
        self.linear_1 = nn.Linear(input_dim, input_dim)
        for param in self.linear_1.parameters():
            param.requires_grad = False

        # requires grad
        self.linear_2 = nn.Linear(input_dim, input_dim)

    def forward(self, x):
        return self.linear_2(torch.relu(self.linear_1(x)))


class SimpleModel(nn.Module):
    def __init__(self, input_dim, num_layers=2):
        super().__init__()
        self.layers = nn.ModuleList([SimpleLayer(input_dim) for _ in range(num_layers)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def build_model(input_dim=8):
    model = SimpleModel(input_dim)
    for layer in model.layers:
        layer.compile()
    return model


def make():
    torch.manual_seed(0)
    x = torch.randn(4, 8)
    x_from_previous_block = torch.randn(4, 8).requires_grad_()
    return SimpleLayer(8), [(x,), (x_from_previous_block,)]
