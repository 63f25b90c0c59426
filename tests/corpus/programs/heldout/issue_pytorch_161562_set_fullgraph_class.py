"""`with torch._dynamo.set_fullgraph(False):` around a class definition in a fullgraph function.

Source: https://github.com/pytorch/pytorch/issues/161562
Kept: `fn` verbatim with `@torch.compile(backend="eager", fullgraph=True)`.
Simplified: nothing.
"""
import torch


@torch.compile(backend="eager", fullgraph=True)
def fn(x):
    y = x + 10

    with torch._dynamo.set_fullgraph(False):
        class Foo:
            def __init__(self, x):
                self.x = x

    f = Foo(x)
    return f.x - y


def make():
    return fn._torchdynamo_orig_callable, [(torch.tensor([1.0]),)]
