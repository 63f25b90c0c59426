"""A layer skipped at random while training (layerdrop), the break that exists only in train mode.

``if self.training and torch.rand([]) < self.layerdrop`` branches on a
tensor: Dynamo logs a data-dependent branch in train mode and nothing in eval
mode, where ``self.training`` short-circuits the test.
"""

import torch
from torch import nn


class LayerDropStack(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(4, 4)
        self.second = nn.Linear(4, 4)
        self.dropout = nn.Dropout(0.1)
        self.layerdrop = 0.0  # as in most configs: never skips, yet the draw and the branch remain

    def forward(self, x):
        x = self.dropout(self.first(x))
        if self.training and torch.rand([]) < self.layerdrop:
            return x
        return self.second(x) + x


def factory():
    """In eval mode, as a model is served; ``verify --train`` puts it in train mode."""
    return LayerDropStack().eval(), (torch.randn(3, 4),)
