"""A compiled function called with a different Python int each time: guards on `i`, recompiles (no break).

Source: https://github.com/vllm-project/vllm/issues/8821
Kept: `@torch.compile def f(x, i): return (x + i) * i` and the calls with i = 1, 2, 3 on one 5x5 tensor.
Simplified: CPU instead of `.cuda()`.
"""
import torch


@torch.compile
def f(x, i):
    return (x + i) * i


def main():
    x = torch.randn(5, 5)
    f(x, 1)
    f(x, 2)
    f(x, 3)


def make():
    torch.manual_seed(0)
    x = torch.randn(5, 5)
    return f._torchdynamo_orig_callable, [(x, 1), (x, 2), (x, 3)]
