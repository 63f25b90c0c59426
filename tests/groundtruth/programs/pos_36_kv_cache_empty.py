"""GM101 positive: a KV-cache step that treats an all-zero cache as empty (`if past.abs().sum() == 0`)."""
import torch
from torch import nn


class CachedProjection(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.k_proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x, past):
        k = self.k_proj(x)
        if past.abs().sum() == 0:  # expect: GM101
            merged = k + 0.0
        else:
            merged = 0.5 * (past + k)
        return merged


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    x = torch.randn(1, 4, 8)
    return CachedProjection(), [(x, torch.zeros(1, 4, 8)), (x, torch.ones(1, 4, 8))]


compiled = torch.compile(CachedProjection())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
