"""`torch._dynamo.graph_break()` inside `with torch._dynamo.error_on_graph_break(True):` after three adds.

Source: https://github.com/pytorch/pytorch/issues/166589
Kept: `fn` from the failing test verbatim, compiled with a CompileCounter backend.
Simplified: the unittest scaffolding is dropped.
"""
import torch
import torch._dynamo.testing

cnts = torch._dynamo.testing.CompileCounter()


@torch.compile(backend=cnts)
def fn(x):
    x = x + 1
    x = x + 1
    x = x + 1
    with torch._dynamo.error_on_graph_break(True):
        torch._dynamo.graph_break()
    return x + 1


def make():
    return fn._torchdynamo_orig_callable, [(torch.ones(3),)]
