"""print(z) of a tensor inside a for loop: the break in the loop makes Dynamo skip the frame.

Source: https://github.com/pytorch/pytorch/pull/116981 (repro in the description: "graph breaks in for/while -> skip")
Kept: foo verbatim (z = x * y, ten iterations of `z = z * y; print(z)`),
the two random 2x2 inputs, compiled with `torch._dynamo.optimize('eager')`
in the original and with its successor spelling `torch.compile(backend="eager")` here.
Simplified: nothing else.
"""
import torch


def foo(x, y):
    z = x * y
    for i in range(10):
        z = z * y
        print(z)
    return z


compiled_foo = torch.compile(foo, backend="eager")


def make():
    torch.manual_seed(0)
    a = torch.randn([2, 2])
    b = torch.randn([2, 2])
    return foo, [(a, b)]
