"""Autoregressive decode step growing a KV cache with `torch.cat` (None on the first step).

Source: pytorch/pytorch#175557 (https://github.com/pytorch/pytorch/issues/175557)
Kept: the reporter's KVCacheModel (a Linear projection, `cache=None` default,
`torch.cat([cache, out], dim=1)` when a cache is passed, tuple return), the
`torch.compile(model, mode="reduce-overhead")` on the eval model, and the decode
loop that feeds the returned cache back with `torch.compiler.cudagraph_mark_step_begin()`.
Simplified: CUDA -> CPU, d 64 -> 8, ten steps -> the first two (no cache,
then a one-step cache); the loop's per-step input is written as a fresh
`torch.randn(1, 1, d)` (the stored thread cuts off at `x = to...`).
"""
import torch


class KVCacheModel(torch.nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.proj = torch.nn.Linear(d, d)

    def forward(self, x, cache=None):
        out = self.proj(x)
        if cache is not None:
            cache = torch.cat([cache, out], dim=1)
        else:
            cache = out
        return out, cache


def main():
    model = KVCacheModel(d=8).eval()
    compiled = torch.compile(model, mode="reduce-overhead")

    cache = None
    for step in range(10):
        torch.compiler.cudagraph_mark_step_begin()
        x = torch.randn(1, 1, 8)
        out, cache = compiled(x, cache)


def make():
    torch.manual_seed(0)
    model = KVCacheModel(d=8).eval()
    x0 = torch.randn(1, 1, 8)
    x1 = torch.randn(1, 1, 8)
    cache = torch.randn(1, 1, 8)
    return model, [(x0, None), (x1, cache)]
