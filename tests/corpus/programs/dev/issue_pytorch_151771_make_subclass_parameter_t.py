"""nn.Linear subclass holding an nn.Parameter subclass built with `Tensor._make_subclass`; compiled fn reads `A.b.t()`.

Source: pytorch/pytorch#151771 (https://github.com/pytorch/pytorch/issues/151771)
Kept: the reporter's classes `a(nn.Linear)` storing `self.b`, `b(nn.Parameter)` whose `__new__` calls
`torch.Tensor._make_subclass(cls, data)`, the global module `A`, and the compiled
`test()` returning `3 * A.b.t()` under `@torch.compile(fullgraph=True, dynamic=True, ...)`.
Simplified: Linear 16x16 and parameter 6x6 instead of 128/12; the inductor `options` dict
(max_autotune, trace.enabled, cudagraphs) dropped; the global is rebuilt seeded in make().
"""
from torch import nn
import torch


class a(nn.Linear):
    def __init__(self, b):
        super().__init__(16, 16)
        self.b = b


class b(nn.Parameter):
    def __new__(cls, data):
        self = torch.Tensor._make_subclass(cls, data)
        return self


A = a(b(torch.zeros(6, 6)))


@torch.compile(fullgraph=True, dynamic=True)
def test():
    out = 3 * A.b.t()
    return out


def make():
    global A
    torch.manual_seed(0)
    A = a(b(torch.randn(6, 6)))
    return test._torchdynamo_orig_callable, [()]
