"""A forward pre-hook registered on the root module that is then compiled with torch.compile(mod).

Source: pytorch/pytorch#117584 (https://github.com/pytorch/pytorch/issues/117584)
Kept: ToyModel verbatim (one bias-free Linear), the lambda pre-hook `input[0] + 1` registered on the
root module, and `torch.compile(mod)`.
Simplified: 18 -> 6 features.
"""
import torch
import torch.nn as nn


class ToyModel(nn.Module):
    def __init__(self):
        super(ToyModel, self).__init__()
        self.net1 = nn.Linear(6, 6, bias=False)

    def forward(self, x):
        return self.net1(x)


def build():
    mod = ToyModel()
    mod.register_forward_pre_hook(
        lambda mod, input: input[0] + 1
    )
    return mod


compiled_mod = torch.compile(build())


def make():
    torch.manual_seed(0)
    return build(), [(torch.rand(6, 6),)]
