"""A forward marked `torch._dynamo.disable(recursive=False)` still has its list comprehension frame traced.

Source: https://github.com/pytorch/pytorch/issues/138654
Kept: the Module with `self._num`, the non-recursive disable on forward, the list comprehension summed with
`sum(values) * x`, the module-level `mod` called from `fn`, and `torch.compile(fn, backend="eager")`.
Simplified: the repro's `torch.cos(i)` takes a Python int, which eager rejects; the index is wrapped in a
0-d float tensor so the program runs eagerly.
"""
import torch


class Module(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self._num = 4

    @torch._dynamo.disable(recursive=False)
    def forward(self, x):
        values = [4 * torch.cos(torch.tensor(float(i))) for i in range(self._num)]
        return sum(values) * x


mod = Module()


def fn(x):
    return mod(x)


opt_fn = torch.compile(fn, backend="eager")


def make():
    torch.manual_seed(0)
    return fn, [(torch.randn(4),)]
