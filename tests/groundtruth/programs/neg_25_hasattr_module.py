"""Negative: `hasattr(self, ...)` and `isinstance(self.norm, nn.LayerNorm)` are static module structure -- no break."""
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, dim=8, with_proj=True, rms=False):
        super().__init__()
        if with_proj:
            self.proj = nn.Linear(dim, dim)
        self.norm = nn.RMSNorm(dim) if rms else nn.LayerNorm(dim)

    def forward(self, x):
        if hasattr(self, "proj"):
            x = self.proj(x)
        if isinstance(self.norm, nn.LayerNorm):
            return self.norm(x) * 2
        return self.norm(x)


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Head(with_proj=True, rms=False)
        self.b = Head(with_proj=False, rms=True)

    def forward(self, x):
        return self.a(x) + self.b(x)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    return TwoHeads(), [(torch.randn(4, 8),)]


compiled = torch.compile(TwoHeads())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
