"""GM101 positive: `if torch.any(pad_mask)` tests a tensor's value (is any position padded?)."""
import torch
from torch import nn


class MaskedMean(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, pad_mask):
        h = self.proj(x)
        if torch.any(pad_mask):  # expect: GM101
            h = h.masked_fill(pad_mask.unsqueeze(-1), 0.0)
        return h.mean(dim=1)


def make():
    """Return (eager_callable, input_sets) where input_sets together take EVERY branch."""
    torch.manual_seed(0)
    model = MaskedMean()
    x = torch.randn(2, 4, 8)
    no_pad = torch.zeros(2, 4, dtype=torch.bool)
    some_pad = torch.tensor([[False, False, True, True], [False, False, False, True]])
    return model, [(x, no_pad), (x, some_pad)]


compiled = torch.compile(MaskedMean())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
