"""Negative: KV cache `if past_key is None: ... else: torch.cat(...)` tests for None -- no break."""
import torch
from torch import nn


class KeyCache(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.k_proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x, past_key=None):
        k = self.k_proj(x)
        if past_key is None:
            keys = k
        else:
            keys = torch.cat([past_key, k], dim=1)
        return keys


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    x = torch.randn(1, 2, 8)
    return KeyCache(), [(x,), (x, torch.randn(1, 3, 8))]


compiled = torch.compile(KeyCache())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
