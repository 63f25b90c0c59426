"""A small MLP compiled, deep-copied after compilation and compiled again (the report's second compile failed on
some machines; the forward itself has no break).

Source: https://github.com/pytorch/pytorch/issues/128121 (the repro posted in the thread, 2025-02-24)
Kept: Net verbatim and the compile / deepcopy / compile sequence.
Simplified: the repro uses `F.log_softmax` without importing `F`; the import is added. 784 inputs -> 16.
"""
from copy import deepcopy

import torch
import torch.nn.functional as F


class Net(torch.nn.Module): # 10+10, N= 7960
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = torch.nn.Linear(16, 10)
        self.relu = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(10, 10)

    def forward(self, x): # line 59 from stderr log below
        z1 = self.fc1(torch.flatten(x, start_dim=1))
        z1 = self.fc2(self.relu(z1))
        return F.log_softmax(z1, dim=1)


def main():
    model_class = Net # not()
    model_hyperparams = ()
    model = model_class(*model_hyperparams)
    model = torch.compile(model) # always ok
    model2 = deepcopy(model) # ok
    model2 = torch.compile(model2) # fails (system dependend)
    return model2


def make():
    torch.manual_seed(0)
    return Net(), [(torch.randn(2, 4, 4),)]
