"""pytorch3d's sample_farthest_points_naive: per-cloud buffers sized by `torch.max(K)` and `lengths[n]`, a Python `randint(0, lengths[n] - 1)` start, `min(lengths[n], K[n])` iterations and an argmax-selected index per step.

Source: facebookresearch/pytorch3d@2293f1fed096642246d3e97a6b8478fa32c61d5e:pytorch3d/ops/sample_farthest_points.py:104-187 (masked_gather from pytorch3d/ops/utils.py)
Kept: input validation (lengths default, int/list/tensor K), the per-cloud
loop with its closest-distance update, masked_gather with its -1 padding
handling, the (points, indices) tuple return; a PointNet++-style set
abstraction layer that samples centroids and embeds them.
Simplified: only the naive sampler (the C++ one is an extension); clouds of
up to 6 points in 3-d, embedding width 8.
"""
from random import randint
from typing import List, Optional, Tuple, Union

import torch
from torch import nn


def masked_gather(points: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Gather points at idx, where -1 marks padding (gathered as index 0, then zeroed)."""
    # Make a copy of the indices
    idx = idx.clone()

    if len(idx) != len(points):
        raise ValueError("points and idx must have the same batch dimension")

    N, P, D = points.shape

    if idx.ndim == 3:
        # Case: KNN, Ball Query where idx is of shape (N, P', K)
        K = idx.shape[2]
        # Match dimensions for points and indices
        idx_expanded = idx[..., None].expand(-1, -1, -1, D)
        points = points[:, :, None, :].expand(-1, -1, K, -1)
    elif idx.ndim == 2:
        # Farthest point sampling where idx is of shape (N, K)
        idx_expanded = idx[..., None].expand(-1, -1, D)
    else:
        raise ValueError("idx format is not supported %s" % repr(idx.shape))

    idx_expanded_mask = idx_expanded.eq(-1)
    idx_expanded = idx_expanded.clone()
    # Replace -1 values with 0 for gather
    idx_expanded[idx_expanded_mask] = 0
    # Gather points
    selected_points = points.gather(dim=1, index=idx_expanded)
    # Replace padded values
    selected_points[idx_expanded_mask] = 0.0
    return selected_points


def sample_farthest_points_naive(
    points: torch.Tensor,
    lengths: Optional[torch.Tensor] = None,
    K: Union[int, List, torch.Tensor] = 50,
    random_start_point: bool = False,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """
    Same Args/Returns as sample_farthest_points
    """
    N, P, D = points.shape
    device = points.device

    # Validate inputs
    if lengths is None:
        lengths = torch.full((N,), P, dtype=torch.int64, device=device)

    if lengths.shape[0] != N:
        raise ValueError("points and lengths must have same batch dimension.")

    # TODO: support providing K as a ratio of the total number of points instead of as an int
    if isinstance(K, int):
        K = torch.full((N,), K, dtype=torch.int64, device=device)
    elif isinstance(K, list):
        K = torch.tensor(K, dtype=torch.int64, device=device)

    if K.shape[0] != N:
        raise ValueError("K and points must have the same batch dimension")

    # Find max value of K
    max_K = torch.max(K)

    # List of selected indices from each batch element
    all_sampled_indices = []

    for n in range(N):
        # Initialize an array for the sampled indices, shape: (max_K,)
        sample_idx_batch = torch.full(
            (max_K,), fill_value=-1, dtype=torch.int64, device=device
        )

        # Initialize closest distances to inf, shape: (P,)
        closest_dists = points.new_full(
            (lengths[n],), float("inf"), dtype=torch.float32
        )

        # Select a random point index and save it as the starting point
        selected_idx = randint(0, lengths[n] - 1) if random_start_point else 0
        sample_idx_batch[0] = selected_idx

        # If the pointcloud has fewer than K points then only iterate over the min
        k_n = min(lengths[n], K[n])

        # Iteratively select points for a maximum of k_n
        for i in range(1, k_n):
            # Find the distance between the last selected point
            # and all the other points.
            dist = points[n, selected_idx, :] - points[n, : lengths[n], :]
            dist_to_last_selected = (dist ** 2).sum(-1)  # (P - i)

            # If closer than currently saved distance to one of the selected
            # points, then updated closest_dists
            closest_dists = torch.min(dist_to_last_selected, closest_dists)  # (P - i)

            # The aim is to pick the point that has the largest
            # nearest neighbour distance to any of the already selected points
            selected_idx = torch.argmax(closest_dists)
            sample_idx_batch[i] = selected_idx

        # Add the list of points for this batch to the final list
        all_sampled_indices.append(sample_idx_batch)

    all_sampled_indices = torch.stack(all_sampled_indices, dim=0)

    # Gather the points
    all_sampled_points = masked_gather(points, all_sampled_indices)

    # Return (N, max_K, D) subsampled points and indices
    return all_sampled_points, all_sampled_indices


class SetAbstraction(nn.Module):
    """Sample centroids with farthest point sampling, then embed their coordinates."""

    def __init__(self, npoint, random_start_point=False, dim=8):
        super().__init__()
        self.npoint = npoint
        self.random_start_point = random_start_point
        self.mlp = nn.Sequential(nn.Linear(3, dim), nn.ReLU(), nn.Linear(dim, dim))

    def forward(self, xyz, lengths=None, K=None):
        new_xyz, fps_idx = sample_farthest_points_naive(
            xyz, lengths, K if K is not None else self.npoint, self.random_start_point
        )
        features = self.mlp(new_xyz)
        valid = (fps_idx >= 0).unsqueeze(-1)
        return new_xyz, features.masked_fill(~valid, 0.0).max(dim=1).values


sa_layer = torch.compile(SetAbstraction(npoint=3))


def make():
    torch.manual_seed(0)
    xyz = torch.randn(2, 6, 3)
    return SetAbstraction(npoint=3, random_start_point=True), [
        (xyz,),
        (xyz, torch.tensor([6, 2])),
        (xyz, torch.tensor([5, 6]), [2, 4]),
    ]
