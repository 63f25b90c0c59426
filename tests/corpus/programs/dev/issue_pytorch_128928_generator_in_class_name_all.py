"""`all()` over a generator testing `"SiLU" in f.__class__.__name__` inside a helper between two adds.

Source: https://github.com/pytorch/pytorch/issues/128928
Kept: the module-level `nn.SiLU`, class `A` with its bare `myfunc`, `break_graph3` building the generator over
`[A.myfunc, m]` and reducing it with `all`, and `toy_example` calling it between `t + 1` and `t + 3`, compiled
with `torch.compile(toy_example)`.
Simplified: nothing.
"""
import torch

m = torch.nn.SiLU()


class A:
    def myfunc():
        pass


def break_graph3(t):
    funcs = [A.myfunc, m]
    iter = ("SiLU" in f.__class__.__name__ for f in funcs)  # "in" not  full supported
    a = all(iter)  # generator not full supported


def toy_example(t):
    t = t + 1
    break_graph3(t)
    t = t + 3
    return t


fn = torch.compile(toy_example)


def make():
    torch.manual_seed(0)
    return toy_example, [(torch.randn(1),)]
