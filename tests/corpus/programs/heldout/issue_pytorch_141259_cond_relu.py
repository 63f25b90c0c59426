"""`cond_relu`: the same relu through `torch.cond` (no graph break when inputs do not require grad).

Source: https://github.com/pytorch/pytorch/issues/141259
Kept: `cond_relu` verbatim, compiled.
Simplified: CPU; only the `requires_grad=False` input of the report (the grad case is a cond error, not
a graph break).
"""
import torch


def cond_relu(x):
    return torch.cond(x > 0, lambda x: x, lambda _: torch.zeros_like(x), [x])


compiled_relu = torch.compile(cond_relu)


def make():
    return cond_relu, [(-torch.ones(()),), (torch.ones(()),)]
