"""A Conv1d subclass calling `super(MyConv1d, self).forward(inputs)` (graph break in 2023; traced now).

Source: https://github.com/pytorch/pytorch/issues/101155
Kept: MyConv1d verbatim and `torch.compile(backend="eager")(m)`.
Simplified: the removed `print_graph_breaks` config is dropped.
"""
import torch
import torch.nn as nn


class MyConv1d(nn.Conv1d):

    def __init__(self, in_channels, out_channels, kernel_size, **kwargs):
        super(MyConv1d, self).__init__(
            in_channels=in_channels,
            out_channels=out_channels,
            kernel_size=kernel_size,
            **kwargs
        )

    def forward(self, inputs, mask=None):
        outputs = super(MyConv1d, self).forward(inputs)
        return outputs


m = MyConv1d(4, 4, 4)
opt_m = torch.compile(backend="eager")(m)


def make():
    torch.manual_seed(0)
    return MyConv1d(4, 4, 4), [(torch.randn(4, 4),)]
