"""torch_scatter's `scatter_sum` sizes its output with `int(index.max()) + 1` unless `dim_size` is given
("Graph break from `Tensor.item()`" when a model compiled with scatter_add calls it).

Source: https://github.com/rusty1s/pytorch_scatter/issues/457 (torch_scatter/scatter.py `scatter_sum` and
utils.py `broadcast`, called from the reporter's molpot pinet.py:343)
Kept: `broadcast` and `scatter_sum` (dim_size / empty index / index.max branches, scatter_add_) and a
message-passing module that compiles around them.
Simplified: the PiNet interaction is one Linear; node features are tiny.
"""
import torch
from torch import nn


def broadcast(src, other, dim):
    if dim < 0:
        dim = other.dim() + dim
    if src.dim() == 1:
        for _ in range(0, dim):
            src = src.unsqueeze(0)
    for _ in range(src.dim(), other.dim()):
        src = src.unsqueeze(-1)
    src = src.expand(other.size())
    return src


def scatter_sum(src, index, dim=-1, out=None, dim_size=None):
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


class PILayer(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.linear = nn.Linear(dim, dim)

    def forward(self, node_feats, edge_index, num_nodes=None):
        messages = self.linear(node_feats[edge_index[1]])
        return scatter_sum(messages, edge_index[0], dim=0, dim_size=num_nodes)


potential = torch.compile(PILayer())


def make():
    torch.manual_seed(0)
    feats = torch.randn(4, 4)
    edges = torch.tensor([[0, 1, 2, 3, 0], [1, 0, 3, 2, 2]])
    return PILayer(), [(feats, edges), (feats, edges, 4)]
