"""GM404 bad: the last valid row picked with `mask.sum() - 1`, a 0-d tensor index (GB0033).

Any reduction over a whole tensor is a 0-d tensor; indexing with it goes through `__index__`
and Dynamo converts it to a Python int ("Data dependent operator"). A 1-d index tensor
(`mask.cumsum(0) - 1`) is a gather the graph keeps: not flagged.
"""
import torch
from torch import nn


class LastValid(nn.Module):
    def forward(self, states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        steps = states * 2
        count = mask.long().sum()
        last = steps[count - 1]
        per_row = steps[mask.long().cumsum(0).clamp(min=1) - 1]
        return last + per_row.sum()


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return LastValid(), [(torch.randn(4, 3), torch.tensor([True, True, False, False]))]


compiled = torch.compile(LastValid())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
