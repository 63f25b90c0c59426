"""GM104 positive: attention refuses fully-masked rows via `if (mask.sum(-1) == 0).any(): raise ValueError`."""
import torch
from torch import nn


class KeyPaddingAttention(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)

    def forward(self, x, key_mask):
        if (key_mask.sum(-1) == 0).any():  # expect: GM104
            raise ValueError("every query row needs at least one visible key")
        scores = self.q(x) @ self.k(x).transpose(-2, -1)
        scores = scores.masked_fill(key_mask[:, None, :] == 0, float("-inf"))
        return scores.softmax(-1) @ x


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch.

    The raising branch is not exercised: calling it would raise ValueError.
    """
    torch.manual_seed(0)
    x = torch.randn(2, 4, 8)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    return KeyPaddingAttention(), [(x, mask)]


compiled = torch.compile(KeyPaddingAttention())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
