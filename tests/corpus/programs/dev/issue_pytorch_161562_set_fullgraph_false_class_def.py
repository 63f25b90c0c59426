"""A class statement inside `set_fullgraph(False)` (now `error_on_graph_break(False)`) in a `fullgraph=True` function.

Source: https://github.com/pytorch/pytorch/issues/161562
Kept: `fn` decorated with `torch.compile(backend="eager", fullgraph=True)`, `y = x + 10`, the local class `Foo`
defined under `set_fullgraph(False)`, and `f.x - y`.
Simplified: `set_fullgraph(False)` was later renamed `torch._dynamo.error_on_graph_break(False)` (pytorch PR
#162027); the program uses the current name.
"""
import torch


@torch.compile(backend="eager", fullgraph=True)
def fn(x):
    y = x + 10

    with torch._dynamo.error_on_graph_break(False):
        class Foo:
            def __init__(self, x):
                self.x = x

    f = Foo(x)
    return f.x - y


def make():
    torch.manual_seed(0)
    return fn._torchdynamo_orig_callable, [(torch.tensor([1.0]),)]
