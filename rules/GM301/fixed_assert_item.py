"""GM301 bad: `assert lengths.max().item() <= slen`, as in transformers' flaubert and xlm `get_masks`."""
import torch
from torch import nn


class LengthMask(nn.Module):
    """Zeroes the padded positions of a batch, after checking the lengths."""

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        bs, slen = x.size()[:2]
        assert lengths.max() <= slen
        mask = torch.arange(slen, device=lengths.device) < lengths[:, None]
        return x * mask.unsqueeze(-1)


def make():
    """Return (eager_callable, input_sets): full, partial and all-zero lengths (an all-false mask)."""
    torch.manual_seed(0)
    x = torch.randn(3, 5, 4)
    lengths = [torch.tensor([5, 2, 1]), torch.tensor([5, 5, 5]), torch.tensor([0, 0, 0])]
    return LengthMask(), [(x, n) for n in lengths]


compiled = torch.compile(LengthMask())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args).sum())
