"""A forward that registers a `functools.partial` gradient hook on its input.

Source: https://github.com/pytorch/pytorch/issues/141046
The reporter's MyMod: `x.register_hook(hook)` with `hook = functools.partial(my_hook, k=3)`,
then two muls, returning a one-element tuple; compiled with fullgraph=True
inside a `with torch.device(...)` block.
Kept: my_hook with its keyword-only `k`, the module-level partial, the tuple return,
the fullgraph compile inside the device context.
Simplified: the device context names "cpu" instead of "cuda".
"""
import functools

import torch


def my_hook(grad, *, k=0):
    return grad + k


hook = functools.partial(my_hook, k=3)


class MyMod(torch.nn.Module):
    def forward(self, x):
        x.register_hook(hook)
        y = x.mul(2)
        z = y.mul(3)
        return (z,)


def run():
    mod = MyMod()
    x = torch.ones(4, requires_grad=True)

    with torch.device("cpu"):
        out = torch.compile(mod, fullgraph=True)(x)
        print(f"{out}")
    return out


def make():
    torch.manual_seed(0)
    return MyMod(), [(torch.ones(4, requires_grad=True),)]
