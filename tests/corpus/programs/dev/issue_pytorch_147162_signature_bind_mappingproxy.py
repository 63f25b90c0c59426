"""`inspect.signature(...).bind(...)` on a module-level signature inside a compiled function.

Source: pytorch/pytorch#147162 (https://github.com/pytorch/pytorch/issues/147162)
Kept: the reporter's `greet` function, the module-level
`sig = inspect.signature(greet)`, `fn(x)` calling `sig.bind("Hello", "Alice")`
before `torch.sin(x)`, and `torch.compile(fn, backend="eager", fullgraph=True)`.
Simplified: nothing.
"""
import inspect

import torch


def greet(greeting, name, punctuation='!'):
    """Simple function to greet a person."""
    print(f"{greeting}, {name}{punctuation}")


# Obtain the signature of the function
sig = inspect.signature(greet)


def fn(x):
    sig.bind("Hello", "Alice")
    return torch.sin(x)


opt_fn = torch.compile(fn, backend="eager", fullgraph=True)


def make():
    torch.manual_seed(0)
    x = torch.randn(3)
    return fn, [(x,)]
