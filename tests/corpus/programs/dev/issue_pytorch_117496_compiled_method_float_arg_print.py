"""A `@torch.compile`d method taking a float argument and printing it and an attribute.

Source: pytorch/pytorch#117496 (https://github.com/pytorch/pytorch/issues/117496)
Kept: the reporter's class `F` (attributes `t` and `r`, `b()` updating `t`
and printing it), its `@torch.compile`d `method(self, A, B, t=1.0)` that prints
an f-string with `t` and `self.t` and returns `A + B + t`, and the loop that
calls `g.method(Z, Z, t=g.t)` with a halving `t`.
Simplified: `torch.set_default_device('cuda')` dropped (CPU); the twin
`free_fun` is left out; four loop steps -> two input sets.
"""
from __future__ import annotations

import torch
from torch import Tensor


class F():

    def __init__(self, V, r):
        self.t = V
        self.r = r

    def b(self):
        self.t = self.t * self.r
        print(f"t={self.t}")

    @torch.compile
    def method(
        self,
        A: Tensor,
        B: Tensor,
        t: float = 1.0
    ) -> Tensor:
        print(f"method: T inside is {t}, self.t is {self.t}")
        return A + B + t


def main():
    g = F(16, 0.5)
    Z = torch.ones(3, 3, 1)
    for _ in range(4):
        g.b()
        g.method(Z, Z, t=g.t)
        print('----')


def make():
    torch.manual_seed(0)
    g = F(16, 0.5)
    Z = torch.ones(3, 3, 1)
    g.b()
    first = (g, Z, Z, g.t)
    g2 = F(16, 0.5)
    g2.b()
    g2.b()
    second = (g2, Z, Z, g2.t)
    return F.method._torchdynamo_orig_callable, [first, second]
