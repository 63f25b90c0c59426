"""A compiled function taking the nn.Module as an argument: `net.forward(x).sum()`.

Source: pytorch/pytorch#134954 (https://github.com/pytorch/pytorch/issues/134954)
Kept: the reporter's module `A(v)` storing a float attribute `b`, its
`forward` `(x.sin() + self.b).sin()`, the free function `forward(net, x)`
calling `net.forward(x).sum()`, compiled with
`torch.compile(forward, fullgraph=True, dynamic=True, backend="inductor", options=...)`,
and `compute(net)` calling it and `y.backward()` for different `A` instances.
Simplified: CUDA device and timing events dropped, x (100,100,100) -> (4,4,4),
the `trace.graph_diagram` option (writes files) and `force_same_precision`
(no longer an inductor option) left out of the options.
"""
import torch
import torch.nn as nn
from torch import Tensor

Mod = nn.Module


class A(Mod):
    def __init__(self, v: float):
        super().__init__()
        self.b = v

    def forward(self, x):
        return (x.sin() + self.b).sin()


def forward(net, x: Tensor) -> Tensor:
    return net.forward(x).sum()


compile_args = dict(fullgraph=True, dynamic=True, backend="inductor",
                    options={'disable_cpp_codegen': False, "triton.cudagraphs": False})
cforward = torch.compile(forward, **compile_args)


def compute(net, x):
    y = cforward(net, x)
    y.backward()


def make():
    torch.manual_seed(0)
    x = torch.rand((4, 4, 4), requires_grad=True)
    return forward, [(A(1.0), x), (A(2.0), x)]
