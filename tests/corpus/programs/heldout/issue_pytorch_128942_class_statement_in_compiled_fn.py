"""A class statement inside a compiled function: "unsupported LOAD_BUILD_CLASS".

Source: https://github.com/pytorch/pytorch/issues/128942
Kept: toy_example defining `class A` with two methods in its body, then
`inp + 2`; compiled with `torch.compile(toy_example, backend="inductor")`.
Simplified: the methods take `self` (the original's do not, which is never
called anyway); the input is a float arange.
"""
import torch


def toy_example(inp):
    class A:
        def __init__(self):
            pass

        def something(self):
            pass

    return inp + 2


compiled_fn = torch.compile(toy_example, backend="inductor")


def make():
    return toy_example, [(torch.arange(2.0),)]
