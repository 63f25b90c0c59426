"""PyG's graph InstanceNorm: with a batch vector and no batch_size, `batch_size = int(batch.max()) + 1`; `degree` then sizes its output through `maybe_num_nodes`, and training updates the running statistics while eval reads them.

Source: pyg-team/pytorch_geometric@5c6461b2305ad068a6d61165b3c55852a11aaa41:torch_geometric/nn/norm/instance_norm.py:1-120
Also: torch_geometric/utils/_degree.py (degree), torch_geometric/utils/num_nodes.py
(maybe_num_nodes), torch_geometric/utils/_scatter.py (scatter 'sum').
Kept: InstanceNorm on top of torch's _InstanceNorm (affine and
track_running_stats plumbing), the `batch is None` path through
F.instance_norm, the training/eval split on
`self.training or not self.track_running_stats`, the running-stat updates
and the affine epilogue.
Simplified: scatter keeps only its 'sum' path; the model around the norm is
Linear -> InstanceNorm -> ReLU -> Linear, compiled for inference on an eval
model (the harness also measures it in training).
"""
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.modules.instancenorm import _InstanceNorm

OptTensor = Optional[Tensor]


def maybe_num_nodes(edge_index: Tensor, num_nodes: Optional[int] = None) -> int:
    if num_nodes is not None:
        return num_nodes
    return int(edge_index.max()) + 1 if edge_index.numel() > 0 else 0


def scatter(src: Tensor, index: Tensor, dim: int = 0,
            dim_size: Optional[int] = None, reduce: str = 'sum') -> Tensor:
    if dim_size is None:
        dim_size = int(index.max()) + 1 if index.numel() > 0 else 0
    size = src.size()[:dim] + (dim_size, ) + src.size()[dim + 1:]
    index = index.view(-1, *([1] * (src.dim() - 1))).expand_as(src)
    return src.new_zeros(size).scatter_add_(dim, index, src)


def degree(index: Tensor, num_nodes: Optional[int] = None,
           dtype: Optional[torch.dtype] = None) -> Tensor:
    N = maybe_num_nodes(index, num_nodes)
    out = torch.zeros((N, ), dtype=dtype, device=index.device)
    one = torch.ones((index.size(0), ), dtype=out.dtype, device=out.device)
    return out.scatter_add_(0, index, one)


class InstanceNorm(_InstanceNorm):
    def __init__(
        self,
        in_channels: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device: Optional[torch.device] = None,
    ):
        super().__init__(in_channels, eps, momentum, affine,
                         track_running_stats, device=device)

    def reset_parameters(self):
        super().reset_parameters()

    def forward(self, x: Tensor, batch: OptTensor = None,
                batch_size: Optional[int] = None) -> Tensor:
        if batch is None:
            out = F.instance_norm(
                x.t().unsqueeze(0), self.running_mean, self.running_var,
                self.weight, self.bias, self.training
                or not self.track_running_stats, self.momentum, self.eps)
            return out.squeeze(0).t()

        if batch_size is None:
            batch_size = int(batch.max()) + 1

        mean = var = unbiased_var = x  # Dummies.

        if self.training or not self.track_running_stats:
            norm = degree(batch, batch_size, dtype=x.dtype).clamp_(min=1)
            norm = norm.view(-1, 1)
            unbiased_norm = (norm - 1).clamp_(min=1)

            mean = scatter(x, batch, dim=0, dim_size=batch_size,
                           reduce='sum') / norm

            x = x - mean.index_select(0, batch)

            var = scatter(x * x, batch, dim=0, dim_size=batch_size,
                          reduce='sum')
            unbiased_var = var / unbiased_norm
            var = var / norm

            momentum = self.momentum
            if self.running_mean is not None:
                self.running_mean = (
                    1 - momentum) * self.running_mean + momentum * mean.mean(0)
            if self.running_var is not None:
                self.running_var = (
                    1 - momentum
                ) * self.running_var + momentum * unbiased_var.mean(0)
        else:
            if self.running_mean is not None:
                mean = self.running_mean.view(1, -1).expand(batch_size, -1)
            if self.running_var is not None:
                var = self.running_var.view(1, -1).expand(batch_size, -1)

            x = x - mean.index_select(0, batch)

        out = x / (var + self.eps).sqrt().index_select(0, batch)

        if self.weight is not None and self.bias is not None:
            out = out * self.weight.view(1, -1) + self.bias.view(1, -1)

        return out


class NodeMLP(torch.nn.Module):
    def __init__(self, in_channels=3, hidden=6, out_channels=2):
        super().__init__()
        self.lin1 = torch.nn.Linear(in_channels, hidden)
        self.norm = InstanceNorm(hidden, affine=True, track_running_stats=True)
        self.lin2 = torch.nn.Linear(hidden, out_channels)

    def forward(self, x, batch=None):
        x = self.norm(self.lin1(x), batch).relu()
        return self.lin2(x)


model = torch.compile(NodeMLP().eval())


def make():
    torch.manual_seed(0)
    x = torch.randn(7, 3)
    batch = torch.tensor([0, 0, 0, 1, 1, 2, 2])
    return NodeMLP().eval(), [(x, batch), (x,)]
