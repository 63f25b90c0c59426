"""A `torch.compiler.disable()`d forward pre-hook on the root module, compiled with `model.compile()`.

Source: pytorch/pytorch#142358 (https://github.com/pytorch/pytorch/issues/142358)
Kept: the reporter's nn.Sequential(Linear, GELU, Linear) with `d_model`, the
no-op pre-hook decorated with `@torch.compiler.disable()` and registered with
`model.register_forward_pre_hook(hook)` on the root module, and `model.compile()`
(the reported entry; `model.forward = torch.compile(model.forward)` was the
reporter's workaround).
Simplified: CUDA -> CPU, d_model 16 -> 8.
"""
import torch
from torch import nn

d_model = 8


@torch.compiler.disable()
def hook(module, input):
    pass


def build():
    model = nn.Sequential(
        nn.Linear(d_model, d_model),
        nn.GELU(),
        nn.Linear(d_model, d_model),
    )
    model.register_forward_pre_hook(hook)
    return model


def main():
    model = build()
    model.compile()  # this doesn't work
    x = torch.randn(4, d_model)
    return model(x)


def make():
    torch.manual_seed(0)
    model = build()
    x = torch.randn(4, d_model)
    return model, [(x,)]
