"""A submodule that registers a full backward hook in __init__, inside a model compiled for training.

Source: pytorch/pytorch#133303 (https://github.com/pytorch/pytorch/issues/133303)
Kept: hook_fn, SubM (register_full_backward_hook in __init__), M (SubM then two Linears), and the
reporter's train()/train_one_epoch() that call `m.train()` and `torch.compile(m, fullgraph=True)`.
Simplified: the thread cuts off after `loss.backward()`; the optimizer step is kept as `opt.step()`.
"""
import torch
import torch.nn as nn


def hook_fn(module, input, output):
    # do anything you like
    return None


class SubM(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)
        self.register_full_backward_hook(hook_fn)

    def forward(self, x):
        return self.fc(x)


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2, 2)
        self.fc2 = nn.Linear(2, 2)
        self.predictions = SubM()

    def forward(self, x):
        x = self.predictions(x)
        x = self.fc1(x)
        return self.fc2(x)


def train(m, opt, data, labels):
    m.train()
    m = torch.compile(m, fullgraph=True)
    train_one_epoch(m, opt, data, labels)


def train_one_epoch(m, opt, data, labels):
    opt.zero_grad(True)
    output = m(data)
    loss = (output - labels).sum()
    loss.backward()
    opt.step()


def make():
    torch.manual_seed(0)
    model = M()
    data = torch.ones(2, requires_grad=True)
    return model.train(), [(data,)]
