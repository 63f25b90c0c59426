"""`functools.wraps` applied to a nested function inside the compiled function.

Source: https://github.com/pytorch/pytorch/issues/103913
Kept: `foo` with the nested `add`, the `@wraps(add)` nested `wrapped_call`, and
`torch.compile(foo, fullgraph=False, backend='aot_eager')` called on two ones tensors.
Simplified: the `counters["graph_break"]` assertion and the non-nested comparison variant are dropped.
"""
from functools import wraps

import torch


def foo(x, y):
    def add(x, y):
        return x + y

    @wraps(add)
    def wrapped_call(x, y):
        return add(x, y)

    return wrapped_call(x, y)


def main():
    x = torch.ones(1,)
    y = torch.ones(1,)
    o = torch.compile(foo, fullgraph=False, backend='aot_eager')(x, y)
    torch.testing.assert_close(o, 2 * x)


def make():
    torch.manual_seed(0)
    return foo, [(torch.ones(1,), torch.ones(1,))]
