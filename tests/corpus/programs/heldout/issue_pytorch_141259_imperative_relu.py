"""`imperative_relu`: `if x > 0:` on a 0-d tensor, the version the reporter compares with `torch.cond`.

Source: https://github.com/pytorch/pytorch/issues/141259
Kept: `imperative_relu` verbatim, compiled.
Simplified: CPU instead of `torch.set_default_device("cuda")`.
"""
import torch


def imperative_relu(x):
    if x > 0:
        return x
    else:
        return torch.zeros_like(x)


compiled_relu = torch.compile(imperative_relu)


def make():
    return imperative_relu, [(-torch.ones(()),), (torch.ones(()),)]
