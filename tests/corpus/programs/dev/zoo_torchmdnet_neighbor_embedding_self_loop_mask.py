"""TorchMD-Net NeighborEmbedding: `mask = edge_index[0] != edge_index[1]`, and `if not mask.all():` the self loops are dropped with boolean-mask reads (`edge_index[:, mask]`, `edge_weight[mask]`) before a cosine-cutoff-weighted message pass; distances are expanded with ExpNormalSmearing.

Source: torchmd/torchmd-net@00bfa6e2b8c1c0e010583f4132c2711475415690:torchmdnet/models/utils.py:36-71,104-183
Kept: NeighborEmbedding.__init__/reset_parameters/forward/message,
ExpNormalSmearing and CosineCutoff verbatim (both cutoff_lower branches).
Simplified: MessagePassing.propagate (aggr="add") is an index_add_ over
edge_index[1]; the caller computes edge_weight with torch.norm from a given
edge list instead of torch_cluster.radius_graph; hidden 8, 6 rbf, max_z 10.
"""
import math

import torch
from torch import nn


class CosineCutoff(nn.Module):
    def __init__(self, cutoff_lower=0.0, cutoff_upper=5.0):
        super(CosineCutoff, self).__init__()
        self.cutoff_lower = cutoff_lower
        self.cutoff_upper = cutoff_upper

    def forward(self, distances):
        if self.cutoff_lower > 0:
            cutoffs = 0.5 * (
                torch.cos(
                    math.pi
                    * (
                        2
                        * (distances - self.cutoff_lower)
                        / (self.cutoff_upper - self.cutoff_lower)
                        + 1.0
                    )
                )
                + 1.0
            )
            # remove contributions below the cutoff radius
            cutoffs = cutoffs * (distances < self.cutoff_upper).float()
            cutoffs = cutoffs * (distances > self.cutoff_lower).float()
            return cutoffs
        else:
            cutoffs = 0.5 * (torch.cos(distances * math.pi / self.cutoff_upper) + 1.0)
            # remove contributions beyond the cutoff radius
            cutoffs = cutoffs * (distances < self.cutoff_upper).float()
            return cutoffs


class ExpNormalSmearing(nn.Module):
    def __init__(self, cutoff_lower=0.0, cutoff_upper=5.0, num_rbf=50, trainable=True):
        super(ExpNormalSmearing, self).__init__()
        self.cutoff_lower = cutoff_lower
        self.cutoff_upper = cutoff_upper
        self.num_rbf = num_rbf
        self.trainable = trainable

        self.cutoff_fn = CosineCutoff(0, cutoff_upper)
        self.alpha = 5.0 / (cutoff_upper - cutoff_lower)

        means, betas = self._initial_params()
        if trainable:
            self.register_parameter("means", nn.Parameter(means))
            self.register_parameter("betas", nn.Parameter(betas))
        else:
            self.register_buffer("means", means)
            self.register_buffer("betas", betas)

    def _initial_params(self):
        # initialize means and betas according to the default values in PhysNet
        # https://pubs.acs.org/doi/10.1021/acs.jctc.9b00181
        start_value = torch.exp(
            torch.scalar_tensor(-self.cutoff_upper + self.cutoff_lower)
        )
        means = torch.linspace(start_value, 1, self.num_rbf)
        betas = torch.tensor(
            [(2 / self.num_rbf * (1 - start_value)) ** -2] * self.num_rbf
        )
        return means, betas

    def reset_parameters(self):
        means, betas = self._initial_params()
        self.means.data.copy_(means)
        self.betas.data.copy_(betas)

    def forward(self, dist):
        dist = dist.unsqueeze(-1)
        return self.cutoff_fn(dist) * torch.exp(
            -self.betas
            * (torch.exp(self.alpha * (-dist + self.cutoff_lower)) - self.means) ** 2
        )


class MessagePassing(nn.Module):
    # Stand-in for torch_geometric.nn.MessagePassing with aggr="add".
    def __init__(self, aggr="add"):
        super().__init__()
        self.aggr = aggr

    def propagate(self, edge_index, x, W, size=None):
        x_j = x[edge_index[0]]
        msg = self.message(x_j, W)
        out = torch.zeros_like(x)
        return out.index_add_(0, edge_index[1], msg)


class NeighborEmbedding(MessagePassing):
    def __init__(self, hidden_channels, num_rbf, cutoff_lower, cutoff_upper, max_z=100):
        super(NeighborEmbedding, self).__init__(aggr="add")
        self.embedding = nn.Embedding(max_z, hidden_channels)
        self.distance_proj = nn.Linear(num_rbf, hidden_channels)
        self.combine = nn.Linear(hidden_channels * 2, hidden_channels)
        self.cutoff = CosineCutoff(cutoff_lower, cutoff_upper)

        self.reset_parameters()

    def reset_parameters(self):
        self.embedding.reset_parameters()
        nn.init.xavier_uniform_(self.distance_proj.weight)
        nn.init.xavier_uniform_(self.combine.weight)
        self.distance_proj.bias.data.fill_(0)
        self.combine.bias.data.fill_(0)

    def forward(self, z, x, edge_index, edge_weight, edge_attr):
        # remove self loops
        mask = edge_index[0] != edge_index[1]
        if not mask.all():
            edge_index = edge_index[:, mask]
            edge_weight = edge_weight[mask]
            edge_attr = edge_attr[mask]

        C = self.cutoff(edge_weight)
        W = self.distance_proj(edge_attr) * C.view(-1, 1)

        x_neighbors = self.embedding(z)
        # propagate_type: (x: Tensor, W: Tensor)
        x_neighbors = self.propagate(edge_index, x=x_neighbors, W=W, size=None)
        x_neighbors = self.combine(torch.cat([x, x_neighbors], dim=1))
        return x_neighbors

    def message(self, x_j, W):
        return x_j * W


class Representation(nn.Module):
    def __init__(self, hidden_channels=8, num_rbf=6, cutoff_lower=0.0, cutoff_upper=5.0, max_z=10):
        super().__init__()
        self.embedding = nn.Embedding(max_z, hidden_channels)
        self.distance_expansion = ExpNormalSmearing(cutoff_lower, cutoff_upper, num_rbf, True)
        self.neighbor_embedding = NeighborEmbedding(hidden_channels, num_rbf, cutoff_lower, cutoff_upper, max_z)

    def forward(self, z, pos, edge_index):
        edge_vec = pos[edge_index[0]] - pos[edge_index[1]]
        edge_weight = torch.norm(edge_vec, dim=-1)
        edge_attr = self.distance_expansion(edge_weight)
        x = self.embedding(z)
        return self.neighbor_embedding(z, x, edge_index, edge_weight, edge_attr)


def create_model(cutoff_lower=0.0):
    return torch.compile(Representation(cutoff_lower=cutoff_lower), dynamic=True)


def make():
    torch.manual_seed(0)
    z = torch.tensor([1, 6, 8, 1])
    pos = torch.randn(4, 3)
    edges = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    loops = torch.tensor([[0, 1, 1, 2, 3], [0, 0, 1, 1, 3]])
    return Representation(), [(z, pos, edges), (z, pos, loops)]
