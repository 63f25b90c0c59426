"""GM301: `operator.index(t)` asks a tensor for `__index__`, which reads its value back (GB0124).

Code that normalises "an int or a 0-d tensor" with `operator.index` copies the tensor to the
host like `int(t)`; `operator.index` of a shape is plain Python and is not flagged.
"""
import operator

import torch
from torch import nn


class LastTokens(nn.Module):
    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        width = operator.index(x.shape[-1])
        keep = operator.index(mask.sum())
        return x[:, width - keep :] * 2


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return LastTokens(), [(torch.randn(2, 4), torch.tensor([1, 1, 0]))]


compiled = torch.compile(LastTokens())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
