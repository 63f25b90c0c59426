"""An inlined helper that opens `torch.autocast(..., dtype=torch.bfloat16)` and graph-breaks inside it.

Source: pytorch/pytorch#102414 (https://github.com/pytorch/pytorch/issues/102414)
Kept: the reporter's `gn(x, y)` (`torch.mm` under
`torch.autocast(device_type=..., dtype=torch.bfloat16)`, an explicit
`torch._dynamo.graph_break()`, then `torch.sin`), `fn(x, y)` computing
`torch.mm(x, y)` and adding `gn(x, y)`, and `torch.compile(backend="eager")(fn)`.
Simplified: CUDA -> CPU (`device_type="cpu"`), 3x3 inputs kept.
"""
import torch
import torch._dynamo


def gn(x, y):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        z = torch.mm(x, y)
        torch._dynamo.graph_break()
        return torch.sin(z)


def fn(x, y):
    z = torch.mm(x, y)
    z = z + gn(x, y)
    return z


opt_fn = torch.compile(backend="eager")(fn)


def make():
    torch.manual_seed(0)
    x = torch.rand(3, 3)
    y = torch.rand(3, 3)
    return fn, [(x, y)]
