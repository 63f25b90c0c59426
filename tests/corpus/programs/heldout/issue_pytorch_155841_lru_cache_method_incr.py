"""A method decorated with @functools.lru_cache, called on an object built inside a compiled function.

Source: pytorch/pytorch#155841 (https://github.com/pytorch/pytorch/issues/155841)
Kept: the reporter's reproducer verbatim: class Foo with an `@functools.lru_cache` method `incr` that
mutates `self.x`, and `fn` decorated with `@torch.compile(backend="eager", fullgraph=True)` that builds
a Foo, calls `f.incr(3)` and adds `f.x` to its input.
Simplified: nothing.
"""
import functools

import torch


class Foo():
    def __init__(self, x):
        self.x = x

    @functools.lru_cache
    def incr(self, val):
        self.x += val


@torch.compile(backend="eager", fullgraph=True)
def fn(x):
    f = Foo(4)
    f.incr(3)
    return x + f.x


def make():
    torch.manual_seed(0)
    return fn._torchdynamo_orig_callable, [(torch.randn(2),)]
