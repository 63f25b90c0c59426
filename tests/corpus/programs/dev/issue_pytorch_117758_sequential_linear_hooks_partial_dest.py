"""Activation-sum forward hooks (`functools.partial`, `@torch._dynamo.disable`) on a compiled MLP.

Source: pytorch/pytorch#117758 (https://github.com/pytorch/pytorch/issues/117758)
Kept: the reporter's nn.Sequential MLP (Linear/ReLU x3) in train mode wrapped by
`torch.compile(model)` with an SGD optimizer, the `@torch._dynamo.disable` hook
`hook(m, i, o, *, idx, dest)` writing `dest[idx] = o.sum()`, the list of Linear
layers taken from `model.modules()`, and each hook bound with
`functools.partial(hook, idx=idx, dest=dest)` and registered with
`register_forward_hook`. make() measures the reporter's first case
(trigger_compilation=False: hooks registered before the first compiled call).
Simplified: CUDA -> CPU, 64/512 features -> 8/16, batch 1024 -> 4. The stored
thread cuts off at the registration loop; the loop body and the step after it
(forward, `.sum().backward()`, `optimizer.step()`) are written the usual way.
"""
from functools import partial

import torch
import torch.nn as nn


def build_model():
    model = nn.Sequential(
        nn.Linear(8, 16),
        nn.ReLU(),
        nn.Linear(16, 16),
        nn.ReLU(),
        nn.Linear(16, 8),
        nn.ReLU(),
    )
    model.train()
    return model


@torch._dynamo.disable
def hook(m, i, o, *, idx, dest):
    dest[idx] = o.sum()


def register_hooks(model, dest):
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    handles = []
    for idx, m in enumerate(linears):
        handles.append(m.register_forward_hook(partial(hook, idx=idx, dest=dest)))
    return handles


def main():
    x = torch.randn(4, 8)
    for trigger_compilation in [False, True]:
        print("trigger_compilation:", trigger_compilation)
        model = build_model()
        model = torch.compile(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        if trigger_compilation:
            model(x)
        dest = {}
        handles = register_hooks(model, dest)
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()
        print(sorted(dest))
        for h in handles:
            h.remove()


def make():
    torch.manual_seed(0)
    model = build_model()
    dest = {}
    register_hooks(model, dest)
    x = torch.randn(4, 8)
    return model, [(x,)]
