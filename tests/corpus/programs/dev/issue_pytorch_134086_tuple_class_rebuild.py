"""Rebuilding a tuple/list of tensors through `x.__class__(...)` and `v.__class__(tensor)` in a compiled fn.

Source: pytorch/pytorch#134086 (https://github.com/pytorch/pytorch/issues/134086)
Kept: the reporter's `fn` (loop over the container, `y = v.__class__(torch.zeros(2, 2))`,
`v * y`, append, `return x.__class__(touched_outputs)`) and `torch.compile(fn, fullgraph=True)`;
the issue shows both the tuple and the list case, so both are input sets here.
Simplified: nothing.
"""
import torch
import torch.nn as nn


def fn(x):
    touched_outputs = []
    for v in x:
        y = v.__class__(torch.zeros(2, 2))
        touched_output = v * y
        touched_outputs.append(touched_output)
    return x.__class__(touched_outputs)


compiled_fn = torch.compile(fn, fullgraph=True)


def make():
    torch.manual_seed(0)
    data1 = torch.ones(2, 2)
    data2 = torch.ones(2, 2)
    return fn, [((data1, data2),), ([data1, data2],)]
