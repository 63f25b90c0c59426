"""Four explicit `torch._dynamo.graph_break()` calls between `sin`s in one compiled function.

Source: https://github.com/pytorch/pytorch/issues/128430
Kept: `f` with `@torch.compile(backend="eager")` verbatim and the `requires_grad` input.
Simplified: the output_graph.py patch of the report (a Dynamo-internal warning) is not reproduced.
"""
import torch


@torch.compile(backend="eager")
def f(x):
    x = x.sin()
    torch._dynamo.graph_break()
    x = x.sin()
    torch._dynamo.graph_break()
    x = x.sin()
    torch._dynamo.graph_break()
    x = x.sin()
    torch._dynamo.graph_break()
    x = x.sin()
    return x


def make():
    return f._torchdynamo_orig_callable, [(torch.ones(2, 2, requires_grad=True),)]
