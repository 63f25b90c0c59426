"""GM301: HuBERT-style mask spans iterate `range(lengths[j])`, a tensor bound (GB0059).

Python's `range` needs ints: Dynamo has no rule for it over a tensor and breaks, with or without
`capture_scalar_outputs`. Span starts are fine as they are; the count must be a Python int.
"""
import torch
from torch import nn


class SpanMasker(nn.Module):
    def __init__(self, mask_length: int = 3) -> None:
        super().__init__()
        self.mask_length = mask_length

    def forward(self, x: torch.Tensor, num_mask: int) -> torch.Tensor:
        starts = torch.randperm(x.shape[-1] - self.mask_length)[:num_mask]
        lengths = torch.full((num_mask,), self.mask_length)
        spans = torch.tensor([starts[j] + offset for j in range(num_mask) for offset in range(lengths[j])])
        mask = torch.zeros(x.shape[-1], dtype=torch.bool)
        mask[spans] = True
        return x.masked_fill(mask, 0.0)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return SpanMasker(), [(torch.randn(2, 10), 2)]


compiled = torch.compile(SpanMasker())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
