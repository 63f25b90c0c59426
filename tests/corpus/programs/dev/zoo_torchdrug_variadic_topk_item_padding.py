"""TorchDrug's variadic_topk: per-set top-k over a flat tensor with `input[mask].max().item()` bounds, `repeat_interleave` of per-set sizes, `multi_slice_mask(...).nonzero()`, an `assert slices.min() >= 0 and slices.max() <= length` guard and `if (num_padding > 0).any():` padding.

Source: DeepGraphLearning/torchdrug@1355018598cef9b5c6e2bff1fe9d2520cff855e0:torchdrug/layers/functional/functional.py:85-380
Also: rusty1s/pytorch_scatter@0cd6dfe843faea066acbaa70f715f8ccfeb331b3:torch_scatter/scatter.py:8-22 (scatter_add, inlined).
Kept: variadic_topk, multi_slice_mask, _size_to_index and _extend verbatim;
a readout module that keeps the top-k node scores per graph, as TorchDrug's
node-ranking heads do.
Simplified: torch_scatter's scatter_add is inlined as its Python definition.
"""
import torch
from torch import nn


def scatter_add(src, index, dim=-1, out=None, dim_size=None):
    size = list(src.size())
    if dim_size is not None:
        size[dim] = dim_size
    elif index.numel() == 0:
        size[dim] = 0
    else:
        size[dim] = int(index.max()) + 1
    out = torch.zeros(size, dtype=src.dtype, device=src.device)
    return out.scatter_add_(dim, index, src)


def multi_slice_mask(starts, ends, length):
    values = torch.cat([torch.ones_like(starts), -torch.ones_like(ends)])
    slices = torch.cat([starts, ends])
    if slices.numel():
        assert slices.min() >= 0 and slices.max() <= length
    mask = scatter_add(values, slices, dim_size=length + 1)[:-1]
    mask = mask.cumsum(0).bool()
    return mask


def _size_to_index(size):
    range = torch.arange(len(size), device=size.device)
    index2sample = range.repeat_interleave(size)
    return index2sample


def _extend(data, size, input, input_size):
    new_size = size + input_size
    new_cum_size = new_size.cumsum(0)
    new_data = torch.zeros(new_cum_size[-1], *data.shape[1:], dtype=data.dtype, device=data.device)
    starts = new_cum_size - new_size
    ends = starts + size
    index = multi_slice_mask(starts, ends, new_cum_size[-1])
    new_data[index] = data
    new_data[~index] = input
    return new_data, new_size


def variadic_topk(input, size, k, largest=True):
    index2graph = _size_to_index(size)
    index2graph = index2graph.view([-1] + [1] * (input.ndim - 1))

    mask = ~torch.isinf(input)
    max = input[mask].max().item()
    min = input[mask].min().item()
    safe_input = input.clamp(2 * min - max, 2 * max - min)
    offset = (max - min) * 4
    if largest:
        offset = -offset
    input_ext = safe_input + offset * index2graph
    index_ext = input_ext.argsort(dim=0, descending=largest)
    num_actual = size.clamp(max=k)
    num_padding = k - num_actual
    starts = size.cumsum(0) - size
    ends = starts + num_actual
    mask = multi_slice_mask(starts, ends, len(index_ext)).nonzero().flatten()

    if (num_padding > 0).any():
        # special case: size < k, pad with the last valid index
        padding = ends - 1
        padding2graph = _size_to_index(num_padding)
        mask = _extend(mask, num_actual, padding[padding2graph], num_padding)[0]

    index = index_ext[mask]  # (N * k, ...)
    value = input.gather(0, index)
    value = value.view(-1, k, *input.shape[1:])
    index = index.view(-1, k, *input.shape[1:])
    index = index - (size.cumsum(0) - size).view([-1] + [1] * (index.ndim - 1))

    return value, index


class NodeTopKReadout(nn.Module):
    def __init__(self, input_dim=4, k=2):
        super().__init__()
        self.k = k
        self.score = nn.Linear(input_dim, 1)

    def forward(self, node_feature, num_nodes):
        score = self.score(node_feature).squeeze(-1)
        value, index = variadic_topk(score, num_nodes, self.k)
        return value, index


def build_model():
    return torch.compile(NodeTopKReadout())


def make():
    torch.manual_seed(0)
    x = torch.randn(7, 4)
    return NodeTopKReadout(), [
        (x, torch.tensor([3, 4])),
        (x, torch.tensor([1, 6])),
    ]
