"""PyG's GCNConv with on-the-fly normalisation: `gcn_norm` -> `add_remaining_self_loops`, which drops existing self-loops with a boolean mask (`edge_index[:, mask]`, `edge_attr[mask]`) before appending one loop per node.

Source: pyg-team/pytorch_geometric@5c6461b2305ad068a6d61165b3c55852a11aaa41:torch_geometric/nn/conv/gcn_conv.py:45-113
Also: torch_geometric/nn/conv/gcn_conv.py (GCNConv.__init__/forward/message),
torch_geometric/utils/loop.py (add_remaining_self_loops, compute_loop_attr),
torch_geometric/utils/num_nodes.py (maybe_num_nodes), torch_geometric/utils/_scatter.py
(scatter 'sum'), examples/gcn.py (the two-layer GCN with cached=True and its
`torch.compile(model, dynamic=False)` as in examples/compile/gcn.py).
Kept: gcn_norm's dense-Tensor path with its flow assert, fill_value from
`improved`, the degree scatter and the `inf` masked_fill; add_remaining_self_loops'
mask / inv_mask handling of edge weights; GCNConv.forward's `_cached_edge_index`
cache plumbing; maybe_num_nodes' branches.
Simplified: no SparseTensor/EdgeIndex/torch.sparse paths; MessagePassing.propagate
is written out as index_select + message + scatter-sum for flow
'source_to_target'; glorot init replaced by nn.Linear's default; 5 nodes.
"""
from typing import Optional, Tuple, Union

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn import Parameter

OptTensor = Optional[Tensor]


def maybe_num_nodes(edge_index, num_nodes: Optional[int] = None) -> int:
    if num_nodes is not None:
        return num_nodes
    elif isinstance(edge_index, Tensor):
        return int(edge_index.max()) + 1 if edge_index.numel() > 0 else 0
    elif isinstance(edge_index, tuple):
        return max(
            int(edge_index[0].max()) + 1 if edge_index[0].numel() > 0 else 0,
            int(edge_index[1].max()) + 1 if edge_index[1].numel() > 0 else 0,
        )
    raise NotImplementedError


def scatter(src: Tensor, index: Tensor, dim: int = 0,
            dim_size: Optional[int] = None, reduce: str = 'sum') -> Tensor:
    dim = src.dim() + dim if dim < 0 else dim
    if dim_size is None:
        dim_size = int(index.max()) + 1 if index.numel() > 0 else 0
    size = src.size()[:dim] + (dim_size, ) + src.size()[dim + 1:]
    view = ((1, ) * dim) + (-1, ) + ((1, ) * (src.dim() - dim - 1))
    index = index.view(view).expand_as(src)
    return src.new_zeros(size).scatter_add_(dim, index, src)


def compute_loop_attr(
    edge_index: Tensor,
    edge_attr: Tensor,
    num_nodes: int,
    is_sparse: bool,
    fill_value: Optional[Union[float, Tensor, str]] = None,
) -> Tensor:

    if fill_value is None:
        size = (num_nodes, ) + edge_attr.size()[1:]
        return edge_attr.new_ones(size)

    elif isinstance(fill_value, (int, float)):
        size = (num_nodes, ) + edge_attr.size()[1:]
        return edge_attr.new_full(size, fill_value)

    elif isinstance(fill_value, Tensor):
        size = (num_nodes, ) + edge_attr.size()[1:]
        loop_attr = fill_value.to(edge_attr.device, edge_attr.dtype)
        if edge_attr.dim() != loop_attr.dim():
            loop_attr = loop_attr.unsqueeze(0)
        return loop_attr.expand(size).contiguous()

    elif isinstance(fill_value, str):
        col = edge_index[0] if is_sparse else edge_index[1]
        return scatter(edge_attr, col, 0, num_nodes, fill_value)

    raise AttributeError("No valid 'fill_value' provided")


def add_remaining_self_loops(
    edge_index: Tensor,
    edge_attr: Optional[Tensor] = None,
    fill_value: Optional[Union[float, Tensor, str]] = None,
    num_nodes: Optional[int] = None,
) -> Tuple[Tensor, Optional[Tensor]]:
    N = maybe_num_nodes(edge_index, num_nodes)
    mask = edge_index[0] != edge_index[1]

    device = edge_index.device
    loop_index = torch.arange(0, N, device=device).view(1, -1).repeat(2, 1)

    if edge_attr is not None:

        loop_attr = compute_loop_attr(  #
            edge_index, edge_attr, N, False, fill_value)

        inv_mask = ~mask
        loop_attr[edge_index[0][inv_mask]] = edge_attr[inv_mask]

        edge_attr = torch.cat([edge_attr[mask], loop_attr], dim=0)

    edge_index = edge_index[:, mask]

    edge_index = torch.cat([edge_index, loop_index], dim=1)

    return edge_index, edge_attr


def gcn_norm(
    edge_index: Tensor,
    edge_weight: OptTensor = None,
    num_nodes: Optional[int] = None,
    improved: bool = False,
    add_self_loops: bool = True,
    flow: str = "source_to_target",
    dtype: Optional[torch.dtype] = None,
):
    fill_value = 2. if improved else 1.

    assert flow in ['source_to_target', 'target_to_source']
    num_nodes = maybe_num_nodes(edge_index, num_nodes)

    if add_self_loops:
        edge_index, edge_weight = add_remaining_self_loops(
            edge_index, edge_weight, fill_value, num_nodes)

    if edge_weight is None:
        edge_weight = torch.ones((edge_index.size(1), ), dtype=dtype,
                                 device=edge_index.device)

    row, col = edge_index[0], edge_index[1]
    idx = col if flow == 'source_to_target' else row
    deg = scatter(edge_weight, idx, dim=0, dim_size=num_nodes, reduce='sum')
    deg_inv_sqrt = deg.pow_(-0.5)
    deg_inv_sqrt.masked_fill_(deg_inv_sqrt == float('inf'), 0)
    edge_weight = deg_inv_sqrt[row] * edge_weight * deg_inv_sqrt[col]

    return edge_index, edge_weight


class GCNConv(torch.nn.Module):
    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        improved: bool = False,
        cached: bool = False,
        add_self_loops: Optional[bool] = None,
        normalize: bool = True,
        bias: bool = True,
        flow: str = 'source_to_target',
        node_dim: int = -2,
    ):
        super().__init__()

        if add_self_loops is None:
            add_self_loops = normalize

        if add_self_loops and not normalize:
            raise ValueError(f"'{self.__class__.__name__}' does not support "
                             f"adding self-loops to the graph when no "
                             f"on-the-fly normalization is applied")

        self.in_channels = in_channels
        self.out_channels = out_channels
        self.improved = improved
        self.cached = cached
        self.add_self_loops = add_self_loops
        self.normalize = normalize
        self.flow = flow
        self.node_dim = node_dim

        self._cached_edge_index = None

        self.lin = torch.nn.Linear(in_channels, out_channels, bias=False)

        if bias:
            self.bias = Parameter(torch.zeros(out_channels))
        else:
            self.register_parameter('bias', None)

    def forward(self, x: Tensor, edge_index: Tensor,
                edge_weight: OptTensor = None) -> Tensor:

        if isinstance(x, (tuple, list)):
            raise ValueError(f"'{self.__class__.__name__}' received a tuple "
                             f"of node features as input while this layer "
                             f"does not support bipartite message passing.")

        if self.normalize:
            if isinstance(edge_index, Tensor):
                cache = self._cached_edge_index
                if cache is None:
                    edge_index, edge_weight = gcn_norm(  # yapf: disable
                        edge_index, edge_weight, x.size(self.node_dim),
                        self.improved, self.add_self_loops, self.flow, x.dtype)
                    if self.cached:
                        self._cached_edge_index = (edge_index, edge_weight)
                else:
                    edge_index, edge_weight = cache[0], cache[1]

        x = self.lin(x)

        out = self.propagate(edge_index, x=x, edge_weight=edge_weight)

        if self.bias is not None:
            out = out + self.bias

        return out

    def propagate(self, edge_index: Tensor, x: Tensor, edge_weight: OptTensor) -> Tensor:
        x_j = x.index_select(self.node_dim, edge_index[0])
        msg = self.message(x_j, edge_weight)
        return scatter(msg, edge_index[1], dim=self.node_dim,
                       dim_size=x.size(self.node_dim), reduce='sum')

    def message(self, x_j: Tensor, edge_weight: OptTensor) -> Tensor:
        return x_j if edge_weight is None else edge_weight.view(-1, 1) * x_j


class GCN(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels):
        super().__init__()
        self.conv1 = GCNConv(in_channels, hidden_channels, cached=True,
                             normalize=True)
        self.conv2 = GCNConv(hidden_channels, out_channels, cached=True,
                             normalize=True)

    def forward(self, x, edge_index, edge_weight=None):
        x = F.dropout(x, p=0.5, training=self.training)
        x = self.conv1(x, edge_index, edge_weight).relu()
        x = F.dropout(x, p=0.5, training=self.training)
        x = self.conv2(x, edge_index, edge_weight)
        return x


model = GCN(in_channels=4, hidden_channels=8, out_channels=3)
model = torch.compile(model, dynamic=False)


def make():
    torch.manual_seed(0)
    x = torch.randn(5, 4)
    ring = torch.tensor([[0, 1, 2, 3, 4, 1], [1, 2, 3, 4, 0, 0]])
    with_loops = torch.tensor([[0, 1, 1, 2, 3, 4], [1, 1, 2, 2, 4, 0]])
    weights = torch.tensor([0.5, 2.0, 1.0, 3.0, 1.5, 1.0])
    return GCN(4, 8, 3), [(x, ring), (x, with_loops, weights)]
