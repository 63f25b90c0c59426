"""PyG's TopKPooling network (examples/proteins_topk_pool.py): `topk` keeps the best nodes per graph with `x_perm[batch_perm[mask]]`, `filter_adj` drops edges with `row[mask], col[mask]`, and the global max/mean readouts size their output with `int(index.max()) + 1`.

Source: pyg-team/pytorch_geometric@5c6461b2305ad068a6d61165b3c55852a11aaa41:torch_geometric/nn/pool/select/topk.py:1-170
Also: torch_geometric/nn/pool/topk_pool.py (TopKPooling.forward),
torch_geometric/nn/pool/select/base.py (SelectOutput), torch_geometric/nn/pool/connect/
filter_edges.py and connect/base.py (filter_adj, FilterEdges, get_pooled_batch),
torch_geometric/nn/pool/glob.py (global_max_pool, global_mean_pool),
torch_geometric/utils/_scatter.py and functions.py (scatter sum/mean/max without
torch_scatter, and cumsum, both written compactly),
torch_geometric/nn/conv/graph_conv.py (GraphConv), examples/proteins_topk_pool.py (Net).
Kept: topk's ratio branch (float ratio -> ceil of ratio * num_nodes) and the
min_score branch, SelectTopK.forward's tanh score, SelectOutput's checks,
FilterEdges' cluster check, filter_adj and get_pooled_batch, TopKPooling's
multiplier, the readouts' `batch is None` shortcut, Net.forward's pooling stack.
Simplified: MessagePassing.propagate is written out (index_select + scatter sum);
`torch.jit.script(SelectOutput)` is left out; uniform init is nn.init.uniform_;
two pooling stages instead of three, 3 input features, 8 hidden.
"""
from typing import Optional, Union

import torch
import torch.nn.functional as F
from torch import Tensor


def cumsum(x: Tensor, dim: int = 0) -> Tensor:
    # torch_geometric.utils.cumsum: an exclusive prefix sum with a leading zero.
    return torch.cat([x.new_zeros(1), torch.cumsum(x, dim=dim)], dim=dim)


def scatter(src: Tensor, index: Tensor, dim: int = 0,
            dim_size: Optional[int] = None, reduce: str = 'sum') -> Tensor:
    # torch_geometric.utils.scatter without torch_scatter: sum, mean and
    # max through scatter_add_/scatter_reduce_ on a broadcast index.
    dim = src.dim() + dim if dim < 0 else dim
    if dim_size is None:
        dim_size = int(index.max()) + 1 if index.numel() > 0 else 0
    size = list(src.size())
    size[dim] = dim_size
    view = [1] * src.dim()
    view[dim] = -1
    expanded = index.view(view).expand_as(src)

    if reduce in ['min', 'max', 'amin', 'amax']:
        return src.new_zeros(size).scatter_reduce_(
            dim, expanded, src, reduce=f'a{reduce[-3:]}', include_self=False)

    out = src.new_zeros(size).scatter_add_(dim, expanded, src)
    if reduce == 'mean':
        count = src.new_zeros(dim_size).scatter_add_(0, index, src.new_ones(src.size(dim)))
        return out / count.clamp(min=1).view(view)
    if reduce == 'sum' or reduce == 'add':
        return out

    raise ValueError(f"Encountered invalid `reduce` argument '{reduce}'")


def softmax(src: Tensor, index: Tensor) -> Tensor:
    src_max = scatter(src.detach(), index, 0, reduce='max')
    out = (src - src_max.index_select(0, index)).exp()
    out_sum = scatter(out, index, 0, reduce='sum') + 1e-16
    return out / out_sum.index_select(0, index)


def global_mean_pool(x: Tensor, batch: Optional[Tensor],
                     size: Optional[int] = None) -> Tensor:
    dim = -1 if isinstance(x, Tensor) and x.dim() == 1 else -2

    if batch is None:
        return x.mean(dim=dim, keepdim=x.dim() <= 2)
    return scatter(x, batch, dim=dim, dim_size=size, reduce='mean')


def global_max_pool(x: Tensor, batch: Optional[Tensor],
                    size: Optional[int] = None) -> Tensor:
    dim = -1 if isinstance(x, Tensor) and x.dim() == 1 else -2

    if batch is None:
        return x.max(dim=dim, keepdim=x.dim() <= 2)[0]
    return scatter(x, batch, dim=dim, dim_size=size, reduce='max')


gap, gmp = global_mean_pool, global_max_pool


class SelectOutput:
    def __init__(
        self,
        node_index: Tensor,
        num_nodes: int,
        cluster_index: Tensor,
        num_clusters: int,
        weight: Optional[Tensor] = None,
    ):
        if node_index.dim() != 1:
            raise ValueError(f"Expected 'node_index' to be one-dimensional "
                             f"(got {node_index.dim()} dimensions)")

        if cluster_index.dim() != 1:
            raise ValueError(f"Expected 'cluster_index' to be one-dimensional "
                             f"(got {cluster_index.dim()} dimensions)")

        if node_index.numel() != cluster_index.numel():
            raise ValueError(f"Expected 'node_index' and 'cluster_index' to "
                             f"hold the same number of values (got "
                             f"{node_index.numel()} and "
                             f"{cluster_index.numel()} values)")

        if weight is not None and weight.dim() != 1:
            raise ValueError(f"Expected 'weight' vector to be one-dimensional "
                             f"(got {weight.dim()} dimensions)")

        self.node_index = node_index
        self.num_nodes = num_nodes
        self.cluster_index = cluster_index
        self.num_clusters = num_clusters
        self.weight = weight


def topk(
    x: Tensor,
    ratio: Optional[Union[float, int]],
    batch: Tensor,
    min_score: Optional[float] = None,
    tol: float = 1e-7,
) -> Tensor:
    if min_score is not None:
        # Make sure that we do not drop all nodes in a graph.
        scores_max = scatter(x, batch, reduce='max')[batch] - tol
        scores_min = scores_max.clamp(max=min_score)

        perm = (x > scores_min).nonzero().view(-1)
        return perm

    if ratio is not None:
        num_nodes = scatter(batch.new_ones(x.size(0)), batch, reduce='sum')

        if ratio >= 1:
            k = num_nodes.new_full((num_nodes.size(0), ), int(ratio))
        else:
            k = (float(ratio) * num_nodes.to(x.dtype)).ceil().to(torch.long)

        x, x_perm = torch.sort(x.view(-1), descending=True)
        batch = batch[x_perm]
        batch, batch_perm = torch.sort(batch, descending=False, stable=True)

        arange = torch.arange(x.size(0), dtype=torch.long, device=x.device)
        ptr = cumsum(num_nodes)
        batched_arange = arange - ptr[batch]
        mask = batched_arange < k[batch]

        return x_perm[batch_perm[mask]]

    raise ValueError("At least one of the 'ratio' and 'min_score' parameters "
                     "must be specified")


class SelectTopK(torch.nn.Module):
    def __init__(self, in_channels: int, ratio: Union[int, float] = 0.5,
                 min_score: Optional[float] = None, act=torch.tanh):
        super().__init__()

        if ratio is None and min_score is None:
            raise ValueError(f"At least one of the 'ratio' and 'min_score' "
                             f"parameters must be specified in "
                             f"'{self.__class__.__name__}'")

        self.in_channels = in_channels
        self.ratio = ratio
        self.min_score = min_score
        self.act = act

        self.weight = torch.nn.Parameter(torch.empty(1, in_channels))
        torch.nn.init.uniform_(self.weight, -1.0 / in_channels ** 0.5, 1.0 / in_channels ** 0.5)

    def forward(self, x: Tensor, batch: Optional[Tensor] = None) -> SelectOutput:
        if batch is None:
            batch = x.new_zeros(x.size(0), dtype=torch.long)

        x = x.view(-1, 1) if x.dim() == 1 else x
        score = (x * self.weight).sum(dim=-1)

        if self.min_score is None:
            score = self.act(score / self.weight.norm(p=2, dim=-1))
        else:
            score = softmax(score, batch)

        node_index = topk(score, self.ratio, batch, self.min_score)

        return SelectOutput(
            node_index=node_index,
            num_nodes=x.size(0),
            cluster_index=torch.arange(node_index.size(0), device=x.device),
            num_clusters=node_index.size(0),
            weight=score[node_index],
        )


def maybe_num_nodes(edge_index: Tensor, num_nodes: Optional[int] = None) -> int:
    if num_nodes is not None:
        return num_nodes
    return int(edge_index.max()) + 1 if edge_index.numel() > 0 else 0


def filter_adj(edge_index, edge_attr, node_index, cluster_index=None, num_nodes=None):
    num_nodes = maybe_num_nodes(edge_index, num_nodes)

    if cluster_index is None:
        cluster_index = torch.arange(node_index.size(0),
                                     device=node_index.device)

    mask = node_index.new_full((num_nodes, ), -1)
    mask[node_index] = cluster_index

    row, col = edge_index[0], edge_index[1]
    row, col = mask[row], mask[col]
    mask = (row >= 0) & (col >= 0)
    row, col = row[mask], col[mask]

    if edge_attr is not None:
        edge_attr = edge_attr[mask]

    return torch.stack([row, col], dim=0), edge_attr


class FilterEdges(torch.nn.Module):
    def forward(self, select_output: SelectOutput, edge_index: Tensor,
                edge_attr: Optional[Tensor] = None, batch: Optional[Tensor] = None):
        if (not torch.jit.is_scripting() and select_output.num_clusters
                != select_output.cluster_index.size(0)):
            raise ValueError(f"'{self.__class__.__name__}' requires each "
                             f"cluster to contain only one node")

        edge_index, edge_attr = filter_adj(
            edge_index,
            edge_attr,
            select_output.node_index,
            select_output.cluster_index,
            num_nodes=select_output.num_nodes,
        )
        batch = self.get_pooled_batch(select_output, batch)

        return edge_index, edge_attr, batch

    @staticmethod
    def get_pooled_batch(select_output: SelectOutput, batch: Optional[Tensor]) -> Optional[Tensor]:
        if batch is None:
            return batch

        out = torch.arange(select_output.num_clusters, device=batch.device)
        return out.scatter_(0, select_output.cluster_index,
                            batch[select_output.node_index])


class TopKPooling(torch.nn.Module):
    def __init__(self, in_channels: int, ratio: Union[int, float] = 0.5,
                 min_score: Optional[float] = None, multiplier: float = 1.,
                 nonlinearity=torch.tanh):
        super().__init__()
        self.in_channels = in_channels
        self.ratio = ratio
        self.min_score = min_score
        self.multiplier = multiplier

        self.select = SelectTopK(in_channels, ratio, min_score, nonlinearity)
        self.connect = FilterEdges()

    def forward(self, x, edge_index, edge_attr=None, batch=None, attn=None):
        if batch is None:
            batch = edge_index.new_zeros(x.size(0))

        attn = x if attn is None else attn
        select_out = self.select(attn, batch)

        perm = select_out.node_index
        score = select_out.weight
        assert score is not None

        x = x[perm] * score.view(-1, 1)
        x = self.multiplier * x if self.multiplier != 1 else x

        edge_index, edge_attr, batch = self.connect(select_out, edge_index, edge_attr, batch)

        return (x, edge_index, edge_attr, batch, perm, score)


class GraphConv(torch.nn.Module):
    def __init__(self, in_channels: int, out_channels: int, bias: bool = True):
        super().__init__()
        self.lin_rel = torch.nn.Linear(in_channels, out_channels, bias=bias)
        self.lin_root = torch.nn.Linear(in_channels, out_channels, bias=False)

    def forward(self, x, edge_index, edge_weight=None):
        if isinstance(x, Tensor):
            x = (x, x)

        out = self.propagate(edge_index, x=x, edge_weight=edge_weight)
        out = self.lin_rel(out)

        x_r = x[1]
        if x_r is not None:
            out = out + self.lin_root(x_r)

        return out

    def propagate(self, edge_index, x, edge_weight):
        x_j = x[0].index_select(0, edge_index[0])
        msg = self.message(x_j, edge_weight)
        return scatter(msg, edge_index[1], dim=0, dim_size=x[1].size(0), reduce='sum')

    def message(self, x_j: Tensor, edge_weight) -> Tensor:
        return x_j if edge_weight is None else edge_weight.view(-1, 1) * x_j


class Net(torch.nn.Module):
    def __init__(self, num_features=3, hidden=8, num_classes=2, min_score=None):
        super().__init__()

        self.conv1 = GraphConv(num_features, hidden)
        self.pool1 = TopKPooling(hidden, ratio=0.8, min_score=min_score)
        self.conv2 = GraphConv(hidden, hidden)
        self.pool2 = TopKPooling(hidden, ratio=0.8, min_score=min_score)

        self.lin1 = torch.nn.Linear(2 * hidden, hidden)
        self.lin2 = torch.nn.Linear(hidden, num_classes)

    def forward(self, x, edge_index, batch):
        x = F.relu(self.conv1(x, edge_index))
        x, edge_index, _, batch, _, _ = self.pool1(x, edge_index, None, batch)
        x1 = torch.cat([gmp(x, batch), gap(x, batch)], dim=1)

        x = F.relu(self.conv2(x, edge_index))
        x, edge_index, _, batch, _, _ = self.pool2(x, edge_index, None, batch)
        x2 = torch.cat([gmp(x, batch), gap(x, batch)], dim=1)

        x = x1 + x2

        x = F.relu(self.lin1(x))
        x = F.dropout(x, p=0.5, training=self.training)
        x = F.log_softmax(self.lin2(x), dim=-1)
        return x


model = torch.compile(Net())


def make():
    torch.manual_seed(0)
    x = torch.randn(7, 3)
    edge_index = torch.tensor([[0, 1, 1, 2, 3, 4, 5, 6, 4],
                               [1, 0, 2, 1, 4, 3, 6, 5, 6]])
    batch = torch.tensor([0, 0, 0, 1, 1, 1, 1])
    return Net(), [(x, edge_index, batch)]
