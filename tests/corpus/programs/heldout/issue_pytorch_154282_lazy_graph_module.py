"""Calling an FX `_LazyGraphModule` (symbolic_trace result made lazy) from a compiled function.

Source: https://github.com/pytorch/pytorch/issues/154282
Kept: the report's repro verbatim: `graph(x)` traced with
`torch.fx.symbolic_trace`, wrapped with
`torch.fx._lazy_graph_module._LazyGraphModule.from_graphmodule`, and called
from `fn` compiled with `backend="eager", fullgraph=True`.
Simplified: nothing; the tensor is 4x4.
"""
import torch


def graph(x):
    return x + 10


gm = torch.fx.symbolic_trace(graph)
lazy_gm = torch.fx._lazy_graph_module._LazyGraphModule.from_graphmodule(gm)


@torch.compile(backend="eager", fullgraph=True)
def fn(x):
    return lazy_gm(x)


def make():
    torch.manual_seed(0)
    return fn._torchdynamo_orig_callable, [(torch.randn(4, 4),)]
