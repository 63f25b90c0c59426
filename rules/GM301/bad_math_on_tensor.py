"""GM301: `math.sqrt` / `math.floor` given a tensor convert it to a Python number (GB0033).

`math` takes numbers: a tensor argument goes through `float(t)`, which Dynamo cannot trace
("Data dependent operator"); with `capture_scalar_outputs` the conversion traces but `math`
then guards on the unbacked number and breaks all the same. `math.sqrt` of a shape is plain
Python and is not flagged.
"""
import math

import torch
from torch import nn


class TokenScale(nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        tokens = mask.sum()
        scale = math.sqrt(tokens)
        keep = math.floor(tokens * 0.5)
        return x * scale / math.sqrt(x.shape[-1]) + keep


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return TokenScale(), [(torch.randn(2, 4), torch.tensor([1.0, 1.0, 0.0]))]


compiled = torch.compile(TokenScale())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
