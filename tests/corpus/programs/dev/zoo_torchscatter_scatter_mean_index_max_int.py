"""torch_scatter's Python scatter_sum/scatter_mean (the definitions behind its TorchScript wrappers): with no `dim_size`, `size[dim] = int(index.max()) + 1`; scatter_mean fixes empty groups with `count[count < 1] = 1`.

Source: rusty1s/pytorch_scatter@0cd6dfe843faea066acbaa70f715f8ccfeb331b3:torch_scatter/scatter.py:1-52
Also: torch_scatter/utils.py (broadcast).
Kept: broadcast, scatter_sum, scatter_mean and scatter's reduce dispatch
verbatim; `size = list(src.size())` as the non-scripted path needs.
Simplified: the @torch.jit.script decorators are dropped (the eager Python
functions are what torch.compile traces); min/max reductions (C++ ops) are
dropped; a mean-aggregation message-passing layer calls it.
"""
from typing import Optional

import torch
from torch import nn


def broadcast(src: torch.Tensor, other: torch.Tensor, dim: int):
    if dim < 0:
        dim = other.dim() + dim
    if src.dim() == 1:
        for _ in range(0, dim):
            src = src.unsqueeze(0)
    for _ in range(src.dim(), other.dim()):
        src = src.unsqueeze(-1)
    src = src.expand(other.size())
    return src


def scatter_sum(src: torch.Tensor, index: torch.Tensor, dim: int = -1,
                out: Optional[torch.Tensor] = None,
                dim_size: Optional[int] = None) -> torch.Tensor:
    index = broadcast(index, src, dim)
    if out is None:
        size = list(src.size())
        if dim_size is not None:
            size[dim] = dim_size
        elif index.numel() == 0:
            size[dim] = 0
        else:
            size[dim] = int(index.max()) + 1
        out = torch.zeros(size, dtype=src.dtype, device=src.device)
        return out.scatter_add_(dim, index, src)
    else:
        return out.scatter_add_(dim, index, src)


def scatter_mean(src: torch.Tensor, index: torch.Tensor, dim: int = -1,
                 out: Optional[torch.Tensor] = None,
                 dim_size: Optional[int] = None) -> torch.Tensor:

    out = scatter_sum(src, index, dim, out, dim_size)
    dim_size = out.size(dim)

    index_dim = dim
    if index_dim < 0:
        index_dim = index_dim + src.dim()
    if index.dim() <= index_dim:
        index_dim = index.dim() - 1

    ones = torch.ones(index.size(), dtype=src.dtype, device=src.device)
    count = scatter_sum(ones, index, index_dim, None, dim_size)
    count[count < 1] = 1
    count = broadcast(count, out, dim)
    rounding_mode = None if torch.is_floating_point(out) else 'floor'
    out.div_(count, rounding_mode=rounding_mode)
    return out


def scatter(src: torch.Tensor, index: torch.Tensor, dim: int = -1,
            out: Optional[torch.Tensor] = None, dim_size: Optional[int] = None,
            reduce: str = "sum") -> torch.Tensor:
    if reduce == 'sum' or reduce == 'add':
        return scatter_sum(src, index, dim, out, dim_size)
    elif reduce == 'mean':
        return scatter_mean(src, index, dim, out, dim_size)
    else:
        raise ValueError


class MeanConv(nn.Module):
    def __init__(self, in_channels=4, out_channels=4, aggr="mean"):
        super().__init__()
        self.aggr = aggr
        self.lin = nn.Linear(in_channels, out_channels)

    def forward(self, x, edge_index, dim_size=None):
        row, col = edge_index
        msg = self.lin(x)[row]
        return scatter(msg, col, dim=0, dim_size=dim_size, reduce=self.aggr)


conv = torch.compile(MeanConv())


def make():
    torch.manual_seed(0)
    x = torch.randn(5, 4)
    edge_index = torch.tensor([[0, 1, 2, 3, 4, 0], [1, 2, 0, 4, 3, 3]])
    return MeanConv(), [(x, edge_index), (x, edge_index, 5), (x, edge_index[:, :0])]
