"""A dynamic=True compiled `x * y` called with different Python floats (recompiles, no break).

Source: https://github.com/pytorch/pytorch/issues/149405
The reporter's repro: `model(x, y)` returns `x * y`, compiled with dynamic=True and
called with y=1.5 then y=2.5; recompiles_verbose shows the guard `L['y'] == 1.5` failing.
Kept: the decorated function and both calls' float values.
Simplified: the 10x10 cuda input -> 3x3 cpu; the TORCH_LOGS env line is dropped.
"""
import torch


@torch.compile(dynamic=True)
def model(x, y):
    return x * y


def make():
    torch.manual_seed(0)
    x = torch.randn((3, 3), requires_grad=False)
    return model._torchdynamo_orig_callable, [(x, 1.5), (x, 2.5)]
