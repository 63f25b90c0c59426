"""pytorch3d's chamfer_distance: `if is_x_heterogeneous:` branches on `(x_lengths != P1).any()`, and the weights checks read `(weights >= 0).all()` and `weights.sum() == 0.0`.

Source: facebookresearch/pytorch3d@0eca74fa5f7bf82f3b93e3e38dd1d84cfedc5630:pytorch3d/loss/chamfer.py:10-205
Kept: _validate_chamfer_reduction_inputs, _handle_pointcloud_input (tensor
path), chamfer_distance with its heterogeneity masks, weights validation,
normals branch and point/batch reductions, the (cham_dist, cham_normals)
tuple return.
Simplified: no Pointclouds class; knn_points/knn_gather (a C++ extension)
are a torch.cdist + topk stand-in with the same (dists, idx) result and
lengths masking; clouds of 3-4 points.
"""
from collections import namedtuple
from typing import Union

import torch
import torch.nn.functional as F

_KNN = namedtuple("KNN", "dists idx knn")


def knn_points(p1, p2, lengths1=None, lengths2=None, K=1):
    # Stand-in for the C++ kernel: squared distances, padded points of p2 masked out.
    dists = torch.cdist(p1, p2) ** 2
    if lengths2 is not None:
        pad2 = torch.arange(p2.shape[1], device=p2.device)[None, None] >= lengths2[:, None, None]
        dists = dists.masked_fill(pad2, float("inf"))
    dists, idx = dists.topk(K, dim=2, largest=False)
    return _KNN(dists=dists, idx=idx, knn=None)


def knn_gather(x, idx, lengths=None):
    N, M, U = x.shape
    _N, L, K = idx.shape
    idx_expanded = idx[:, :, :, None].expand(-1, -1, -1, U)
    x_out = x[:, :, None].expand(-1, -1, K, -1).gather(1, idx_expanded)
    return x_out


def _validate_chamfer_reduction_inputs(
    batch_reduction: Union[str, None], point_reduction: str
):
    """Check the requested reductions are valid."""
    if batch_reduction is not None and batch_reduction not in ["mean", "sum"]:
        raise ValueError('batch_reduction must be one of ["mean", "sum"] or None')
    if point_reduction not in ["mean", "sum"]:
        raise ValueError('point_reduction must be one of ["mean", "sum"]')


def _handle_pointcloud_input(
    points: torch.Tensor,
    lengths: Union[torch.Tensor, None],
    normals: Union[torch.Tensor, None],
):
    """Return the input points (and normals) with the number of points per cloud."""
    if torch.is_tensor(points):
        if points.ndim != 3:
            raise ValueError("Expected points to be of shape (N, P, D)")
        X = points
        if lengths is not None and (
            lengths.ndim != 1 or lengths.shape[0] != X.shape[0]
        ):
            raise ValueError("Expected lengths to be of shape (N,)")
        if lengths is None:
            lengths = torch.full(
                (X.shape[0],), X.shape[1], dtype=torch.int64, device=points.device
            )
        if normals is not None and normals.ndim != 3:
            raise ValueError("Expected normals to be of shape (N, P, 3")
    else:
        raise ValueError(
            "The input pointclouds should be either "
            + "Pointclouds objects or torch.Tensor of shape "
            + "(minibatch, num_points, 3)."
        )
    return X, lengths, normals


def chamfer_distance(
    x,
    y,
    x_lengths=None,
    y_lengths=None,
    x_normals=None,
    y_normals=None,
    weights=None,
    batch_reduction: Union[str, None] = "mean",
    point_reduction: str = "mean",
):
    """Chamfer distance between two pointclouds x and y."""
    _validate_chamfer_reduction_inputs(batch_reduction, point_reduction)

    x, x_lengths, x_normals = _handle_pointcloud_input(x, x_lengths, x_normals)
    y, y_lengths, y_normals = _handle_pointcloud_input(y, y_lengths, y_normals)

    return_normals = x_normals is not None and y_normals is not None

    N, P1, D = x.shape
    P2 = y.shape[1]

    # Check if inputs are heterogeneous and create a lengths mask.
    is_x_heterogeneous = (x_lengths != P1).any()
    is_y_heterogeneous = (y_lengths != P2).any()
    x_mask = (
        torch.arange(P1, device=x.device)[None] >= x_lengths[:, None]
    )  # shape [N, P1]
    y_mask = (
        torch.arange(P2, device=y.device)[None] >= y_lengths[:, None]
    )  # shape [N, P2]

    if y.shape[0] != N or y.shape[2] != D:
        raise ValueError("y does not have the correct shape.")
    if weights is not None:
        if weights.size(0) != N:
            raise ValueError("weights must be of shape (N,).")
        if not (weights >= 0).all():
            raise ValueError("weights cannot be negative.")
        if weights.sum() == 0.0:
            weights = weights.view(N, 1)
            if batch_reduction in ["mean", "sum"]:
                return (
                    (x.sum((1, 2)) * weights).sum() * 0.0,
                    (x.sum((1, 2)) * weights).sum() * 0.0,
                )
            return ((x.sum((1, 2)) * weights) * 0.0, (x.sum((1, 2)) * weights) * 0.0)

    cham_norm_x = x.new_zeros(())
    cham_norm_y = x.new_zeros(())

    x_nn = knn_points(x, y, lengths1=x_lengths, lengths2=y_lengths, K=1)
    y_nn = knn_points(y, x, lengths1=y_lengths, lengths2=x_lengths, K=1)

    cham_x = x_nn.dists[..., 0]  # (N, P1)
    cham_y = y_nn.dists[..., 0]  # (N, P2)

    if is_x_heterogeneous:
        cham_x[x_mask] = 0.0
    if is_y_heterogeneous:
        cham_y[y_mask] = 0.0

    if weights is not None:
        cham_x *= weights.view(N, 1)
        cham_y *= weights.view(N, 1)

    if return_normals:
        # Gather the normals using the indices and keep only value for k=0
        x_normals_near = knn_gather(y_normals, x_nn.idx, y_lengths)[..., 0, :]
        y_normals_near = knn_gather(x_normals, y_nn.idx, x_lengths)[..., 0, :]

        cham_norm_x = 1 - torch.abs(
            F.cosine_similarity(x_normals, x_normals_near, dim=2, eps=1e-6)
        )
        cham_norm_y = 1 - torch.abs(
            F.cosine_similarity(y_normals, y_normals_near, dim=2, eps=1e-6)
        )

        if is_x_heterogeneous:
            cham_norm_x[x_mask] = 0.0
        if is_y_heterogeneous:
            cham_norm_y[y_mask] = 0.0

        if weights is not None:
            cham_norm_x *= weights.view(N, 1)
            cham_norm_y *= weights.view(N, 1)

    # Apply point reduction
    cham_x = cham_x.sum(1)  # (N,)
    cham_y = cham_y.sum(1)  # (N,)
    if return_normals:
        cham_norm_x = cham_norm_x.sum(1)  # (N,)
        cham_norm_y = cham_norm_y.sum(1)  # (N,)
    if point_reduction == "mean":
        cham_x /= x_lengths
        cham_y /= y_lengths
        if return_normals:
            cham_norm_x /= x_lengths
            cham_norm_y /= y_lengths

    if batch_reduction is not None:
        # batch_reduction == "sum"
        cham_x = cham_x.sum()
        cham_y = cham_y.sum()
        if return_normals:
            cham_norm_x = cham_norm_x.sum()
            cham_norm_y = cham_norm_y.sum()
        if batch_reduction == "mean":
            div = weights.sum() if weights is not None else N
            cham_x /= div
            cham_y /= div
            if return_normals:
                cham_norm_x /= div
                cham_norm_y /= div

    cham_dist = cham_x + cham_y
    cham_normals = cham_norm_x + cham_norm_y if return_normals else None

    return cham_dist, cham_normals


def fit_step(src, trg, src_lengths=None, trg_lengths=None, src_normals=None, trg_normals=None, weights=None, batch_reduction="mean"):
    loss_chamfer, loss_normals = chamfer_distance(
        src, trg, x_lengths=src_lengths, y_lengths=trg_lengths,
        x_normals=src_normals, y_normals=trg_normals, weights=weights,
        batch_reduction=batch_reduction,
    )
    if loss_normals is None:
        return loss_chamfer
    return loss_chamfer + 0.1 * loss_normals


compiled_fit_step = torch.compile(fit_step, dynamic=False)

RAISING_INPUTS = {4: "ValueError"}


def make():
    torch.manual_seed(0)
    src = torch.randn(2, 4, 3)
    trg = torch.randn(2, 3, 3)
    nx = F.normalize(torch.randn(2, 4, 3), dim=2)
    ny = F.normalize(torch.randn(2, 3, 3), dim=2)
    full = torch.tensor([4, 4])
    ragged = torch.tensor([4, 2])
    return fit_step, [
        (src, trg),
        (src, trg, ragged, torch.tensor([3, 2]), nx, ny),
        (src, trg, full, None, None, None, torch.tensor([0.5, 1.5]), "sum"),
        (src, trg, None, None, None, None, torch.tensor([0.0, 0.0])),
        (src, trg, None, None, None, None, torch.tensor([-1.0, 1.0])),
        (src, trg, None, None, None, None, torch.tensor([0.0, 0.0]), None),
    ]
