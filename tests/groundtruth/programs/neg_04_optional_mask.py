"""Negative: `if attention_mask is not None` tests for None, not a tensor value -- no break."""
import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, attention_mask=None):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / 8 ** 0.5
        if attention_mask is not None:
            scores = scores.masked_fill(attention_mask == 0, float("-inf"))
        return scores.softmax(-1) @ v


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    x = torch.randn(1, 4, 8)
    mask = torch.tril(torch.ones(4, 4))
    return SelfAttention(), [(x,), (x, mask)]


compiled = torch.compile(SelfAttention())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
