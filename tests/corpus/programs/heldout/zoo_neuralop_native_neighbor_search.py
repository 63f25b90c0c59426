"""neuraloperator NeighborSearch (native fallback): `dists.nonzero()[:,1:]` gives the neighbor indices in CSR form and `dists[dists.nonzero(as_tuple=True)]` the squared-norm weights.

Source: neuraloperator/neuraloperator@00ef33060e738828302904c1ef6a76a7e5549806:neuralop/layers/neighbor_search.py:1-104
Kept: NeighborSearch.__init__ (open3d probe, search_fn selection), forward's
return_dict plumbing and native_neighbor_search verbatim.
Simplified: open3d is never built here (the try/except import is kept as a flag);
12 data points and 5 query points in 3-d.
"""
import torch
from torch import nn

# only import open3d if built
open3d_built = False
try:
    from open3d.ml.torch.layers import FixedRadiusSearch  # noqa: F401
    open3d_built = True
except Exception:
    pass


# Uses open3d by default which, as of October 2024, requires torch 2.0 and cuda11.*
class NeighborSearch(nn.Module):
    """
    Neighborhood search between two arbitrary coordinate meshes.
    For each point `x` in `queries`, returns a set of the indices of all points `y` in `data`
    within the ball of radius r `B_r(x)`
    """
    def __init__(self, use_open3d=True, return_norm=False):
        super().__init__()
        if use_open3d and open3d_built:  # slightly faster, works on GPU in 3d only
            self.search_fn = FixedRadiusSearch()
            self.use_open3d = use_open3d
        else:  # slower fallback, works on GPU and CPU
            self.search_fn = native_neighbor_search
            self.use_open3d = False
        self.return_norm = return_norm

    def forward(self, data, queries, radius):
        return_dict = {}

        if self.use_open3d:
            search_return = self.search_fn(data, queries, radius)
            return_dict['neighbors_index'] = search_return.neighbors_index.long()
            return_dict['neighbors_row_splits'] = search_return.neighbors_row_splits.long()

        else:
            return_dict = self.search_fn(data, queries, radius, self.return_norm)

        return return_dict


def native_neighbor_search(data: torch.Tensor, queries: torch.Tensor, radius: float, return_norm: bool = False):
    """
    Native PyTorch implementation of a neighborhood search
    between two arbitrary coordinate meshes.
    """
    nbr_dict = {}

    # compute pairwise distances
    all_dists = torch.cdist(queries, data).to(queries.device)  # shaped num query points x num data points
    ## keep zero-dist points
    eps = 1e-7
    dists = torch.where(all_dists <= radius, all_dists + eps, 0.)  # i,j is 1 if j is i's neighbor
    nbr_indices = dists.nonzero()[:, 1:].reshape(-1,)  # only keep the column indices
    if return_norm:
        weights = dists[dists.nonzero(as_tuple=True)]
        nbr_dict['weights'] = weights ** 2  # weighting function computed on squared norms
    in_nbr = torch.where(dists > 0, 1., 0.,)
    nbrhd_sizes = torch.cumsum(torch.sum(in_nbr, dim=1), dim=0)  # num points in each neighborhood, summed cumulatively
    splits = torch.cat((torch.tensor([0.]).to(queries.device), nbrhd_sizes))

    nbr_dict['neighbors_index'] = nbr_indices.long().to(queries.device)
    nbr_dict['neighbors_row_splits'] = splits.long()

    return nbr_dict


nb_search = torch.compile(NeighborSearch(use_open3d=False, return_norm=True))


def make():
    torch.manual_seed(0)
    data = torch.rand(12, 3)
    queries = torch.rand(5, 3)
    return NeighborSearch(use_open3d=False, return_norm=True), [
        (data, queries, 0.5),
        (data, queries, 0.2),
    ]
