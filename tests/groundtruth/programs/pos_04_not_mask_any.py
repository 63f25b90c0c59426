"""GM101 positive: attention early-exit `if not attn_mask.any()` depends on the mask's values."""
import torch
from torch import nn


class MaskedAttention(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.scale = dim ** -0.5

    def forward(self, x, attn_mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = (q @ k.transpose(-2, -1)) * self.scale
        if not attn_mask.any():  # expect: GM101
            return scores.softmax(-1) @ v
        scores = scores.masked_fill(attn_mask, float("-inf"))
        return scores.softmax(-1) @ v


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    model = MaskedAttention()
    x = torch.randn(1, 4, 8)
    none_masked = torch.zeros(4, 4, dtype=torch.bool)
    causal = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)
    return model, [(x, none_masked), (x, causal)]


model = MaskedAttention()
cmodel = torch.compile(model)

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
