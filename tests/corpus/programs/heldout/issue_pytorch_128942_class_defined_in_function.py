"""A class statement inside the compiled function (`LOAD_BUILD_CLASS`) breaks the graph.

Source: https://github.com/pytorch/pytorch/issues/128942
Kept: `toy_example` verbatim and `torch.compile(toy_example, backend="inductor")`.
Simplified: nothing.
"""
import torch
import torch._dynamo as dynamo


def toy_example(inp):
    class A:
        def __init__():
            pass
        def something():
            pass
    return inp + 2


compiled_fn = torch.compile(toy_example, backend="inductor")


def make():
    return toy_example, [(torch.arange(2),)]
