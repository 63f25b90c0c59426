"""An nn.Module with a parameter and a tensor constant (no buffer), built inside the compiled function.

Source: pytorch/pytorch#128556 (https://github.com/pytorch/pytorch/issues/128556)
Kept: the reporter's second repro ("If you remove the buffer"): `MyMod`
creating an `nn.Parameter` and storing the constructor argument, `forward`
returning `self.param + self.constant`, and `fn(x)` constructing
`MyMod(torch.ones((2, 2)))` and calling it, compiled with
`torch.compile(backend="eager", fullgraph=True)(fn)`.
Simplified: nothing.
"""
import torch


class MyMod(torch.nn.Module):
    def __init__(self, constant):
        super().__init__()
        self.param = torch.nn.Parameter(torch.randn([2, 2]))
        self.constant = constant

    def forward(self, x):
        return self.param + self.constant


def fn(x):
    return MyMod(torch.ones((2, 2)))(x)


f = torch.compile(backend="eager", fullgraph=True)(fn)


def make():
    torch.manual_seed(0)
    return fn, [(torch.randn([2, 2]),)]
