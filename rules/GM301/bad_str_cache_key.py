"""GM301 bad: a relative-position module that caches its bias table under a key built with
`str()` of a tensor (the longest length in the batch).

`str(t)` reads the tensor's values as text: Dynamo has no rule for it and breaks at the call
("Failed to trace builtin operator", GB0059), whether or not `capture_scalar_outputs` is on.
"""
import torch
from torch import nn


class RelativeBias(nn.Module):
    def __init__(self, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.cache: dict[str, torch.Tensor] = {}

    def forward(self, scores: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        key = str(lengths.max())
        if key not in self.cache:
            self.cache[key] = torch.zeros(self.heads, 1, 1)
        return scores + self.cache[key]


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return RelativeBias(), [(torch.randn(2, 3, 3), torch.tensor([3, 2]))]


bias = torch.compile(RelativeBias())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
