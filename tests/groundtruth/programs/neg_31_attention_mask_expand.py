"""Negative: HF-style mask preparation `if mask is not None and mask.dim() == 2` (None + rank tests) -- no break."""
import torch
from torch import nn


def expand_mask(mask, dtype):
    if mask.dim() == 2:
        mask = mask[:, None, None, :]
    return (1.0 - mask.to(dtype)) * torch.finfo(dtype).min


class Encoder(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)

    def forward(self, x, attention_mask=None):
        scores = (self.q(x) @ self.k(x).transpose(-2, -1)).unsqueeze(1)
        if attention_mask is not None and attention_mask.dim() in (2, 4):
            scores = scores + expand_mask(attention_mask, scores.dtype)
        return scores.softmax(-1).squeeze(1) @ x


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    x = torch.randn(2, 4, 8)
    mask2d = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    mask4d = mask2d[:, None, None, :]
    return Encoder(), [(x,), (x, mask2d), (x, mask4d)]


compiled = torch.compile(Encoder())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
