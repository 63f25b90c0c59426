"""`x = copy.copy(x)` at the top of a module's forward, compiled with fullgraph settings from a dict.

Source: pytorch/pytorch#107570 (https://github.com/pytorch/pytorch/issues/107570)
Kept: CustomModel verbatim (copy.copy of the input, then an inplace ReLU) and the
`torch.compile(mymodel, **compile_setting)` entry with {'mode': None, 'fullgraph': True, 'dynamic': False}.
Simplified: nothing beyond dropping the prints.
"""
import copy

import torch
import torch.nn as nn


class CustomModel(nn.Module):
    def __init__(self):
        super(CustomModel, self).__init__()
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        x = copy.copy(x)
        x = self.relu(x)
        return x


compile_setting = {'mode': None, 'fullgraph': True, 'dynamic': False}


def run(mymodel, input_tensor):
    output = mymodel(input_tensor)
    op_output = torch.compile(mymodel, **compile_setting)(input_tensor)
    return output, op_output


def make():
    torch.manual_seed(0)
    return CustomModel(), [(torch.rand([1, 2]),)]
