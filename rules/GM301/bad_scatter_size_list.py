"""GM301: torch_scatter's output size, a list filled in with a tensor, is copied to Python ints (GB0033).

`scatter_sum` sizes its output from `list(src.size())` with one entry replaced
by `dim_size`; graph pooling passes `batch.max() + 1`, a 0-d tensor, so
`torch.zeros(size)` reads it back at that line.
"""
import torch
from torch import nn


def scatter_sum(src: torch.Tensor, index: torch.Tensor, dim: int = 0, dim_size=None) -> torch.Tensor:
    size = list(src.size())
    if dim_size is not None:
        size[dim] = dim_size
    out = torch.zeros(size, dtype=src.dtype)
    return out.scatter_add_(dim, index, src)


class GlobalAddPool(nn.Module):
    def forward(self, x: torch.Tensor, batch: torch.Tensor) -> torch.Tensor:
        num_graphs = batch.max() + 1
        return scatter_sum(x, batch.unsqueeze(-1).expand_as(x), dim=0, dim_size=num_graphs)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return GlobalAddPool(), [(torch.randn(5, 3), torch.tensor([0, 0, 1, 1, 2]))]


compiled = torch.compile(GlobalAddPool())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
