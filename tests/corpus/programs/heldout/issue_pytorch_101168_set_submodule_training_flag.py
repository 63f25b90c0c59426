"""Flipping `models[0].training = False` on a global Sequential inside a compiled function (yolov7 pattern).

Source: pytorch/pytorch#101168 (https://github.com/pytorch/pytorch/issues/101168)
Kept: the reporter's minimal repro verbatim: a module-level `nn.Sequential(nn.Linear(3, 3))`, and
`run()` that sets the submodule's `training` attribute, makes its own input and calls the model,
decorated with `@torch._dynamo.optimize("eager", nopython=True)`.
Simplified: nothing.
"""
import torch
import torch.nn as nn


models = nn.Sequential(nn.Linear(3, 3))


@torch._dynamo.optimize("eager", nopython=True)
def run():
    models[0].training = False
    x = torch.randn(1, 3)
    return models(x)


def make():
    torch.manual_seed(0)
    return run._torchdynamo_orig_callable, [()]
