"""AdaBins training losses: SILogLoss on `input[mask]` and BinsChamferLoss building per-image valid-depth lists (`p[m]`, `len(t)`, pad_sequence) before chamfer distance.

Source: shariqfarooq123/AdaBins@0952d91e9e762be310bb4cd055cbfe2448c0ce20:loss.py:1-45
Kept: SILogLoss and BinsChamferLoss verbatim; the loss lines of the train loop
(train.py:189-197: `mask = depth > args.min_depth`, the `args.w_chamfer > 0`
branch with its `torch.Tensor([0]).to(img.device)` fallback, the weighted sum).
Simplified: those train-loop lines are wrapped in a `compute_loss` function
(args as a Namespace); pytorch3d.loss.chamfer_distance (knn_points C++/CUDA op)
is replaced by a pure-torch stand-in with the same signature, `y_lengths`
padding mask and mean reductions; depth maps 8x8, predictions 4x4.
"""
from argparse import Namespace

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence


def chamfer_distance(x, y, x_lengths=None, y_lengths=None):
    # stand-in for pytorch3d.loss.chamfer_distance (point_reduction="mean",
    # batch_reduction="mean"); squared distances as in pytorch3d
    N, P1, D = x.shape
    P2 = y.shape[1]
    if y_lengths is None:
        y_lengths = torch.full((N,), P2, dtype=torch.int64, device=y.device)
    y_mask = torch.arange(P2, device=y.device)[None] >= y_lengths[:, None]  # shape [N, P2]
    d = ((x[:, :, None, :] - y[:, None, :, :]) ** 2).sum(-1)  # N, P1, P2
    cham_x = d.masked_fill(y_mask[:, None, :], float("inf")).min(2)[0]  # N, P1
    cham_y = d.min(1)[0]  # N, P2
    cham_y = cham_y.masked_fill(y_mask, 0.0)
    cham_x = cham_x.sum(1) / P1
    cham_y = cham_y.sum(1) / y_lengths
    cham_dist = (cham_x + cham_y).sum() / N
    return cham_dist, None


class SILogLoss(nn.Module):  # Main loss function used in AdaBins paper
    def __init__(self):
        super(SILogLoss, self).__init__()
        self.name = 'SILog'

    def forward(self, input, target, mask=None, interpolate=True):
        if interpolate:
            input = nn.functional.interpolate(input, target.shape[-2:], mode='bilinear', align_corners=True)

        if mask is not None:
            input = input[mask]
            target = target[mask]
        g = torch.log(input) - torch.log(target)
        # n, c, h, w = g.shape
        # norm = 1/(h*w)
        # Dg = norm * torch.sum(g**2) - (0.85/(norm**2)) * (torch.sum(g))**2

        Dg = torch.var(g) + 0.15 * torch.pow(torch.mean(g), 2)
        return 10 * torch.sqrt(Dg)


class BinsChamferLoss(nn.Module):  # Bin centers regularizer used in AdaBins paper
    def __init__(self):
        super().__init__()
        self.name = "ChamferLoss"

    def forward(self, bins, target_depth_maps):
        bin_centers = 0.5 * (bins[:, 1:] + bins[:, :-1])
        n, p = bin_centers.shape
        input_points = bin_centers.view(n, p, 1)  # .shape = n, p, 1
        # n, c, h, w = target_depth_maps.shape

        target_points = target_depth_maps.flatten(1)  # n, hwc
        mask = target_points.ge(1e-3)  # only valid ground truth points
        target_points = [p[m] for p, m in zip(target_points, mask)]
        target_lengths = torch.Tensor([len(t) for t in target_points]).long().to(target_depth_maps.device)
        target_points = pad_sequence(target_points, batch_first=True).unsqueeze(2)  # .shape = n, T, 1

        loss, _ = chamfer_distance(x=input_points, y=target_points, y_lengths=target_lengths)
        return loss


criterion_ueff = SILogLoss()
criterion_bins = BinsChamferLoss()


@torch.compile
def compute_loss(bin_edges, pred, depth, args):
    mask = depth > args.min_depth
    l_dense = criterion_ueff(pred, depth, mask=mask.to(torch.bool), interpolate=True)

    if args.w_chamfer > 0:
        l_chamfer = criterion_bins(bin_edges, depth)
    else:
        l_chamfer = torch.Tensor([0]).to(depth.device)

    loss = l_dense + args.w_chamfer * l_chamfer
    return loss


def make():
    torch.manual_seed(0)
    n_bins = 8
    widths = torch.rand(2, n_bins).softmax(dim=1) * 10.0
    bin_edges = torch.cumsum(nn.functional.pad(widths, (1, 0), value=1e-3), dim=1)
    pred = torch.rand(2, 1, 4, 4) * 9.0 + 0.5
    depth = torch.rand(2, 1, 8, 8) * 9.0 + 0.5
    depth[0, 0, :2] = 0.0  # invalid pixels in the first image only
    depth[1, 0, 5, 3] = 0.0
    args_chamfer = Namespace(min_depth=1e-3, w_chamfer=0.1)
    args_no_chamfer = Namespace(min_depth=1e-3, w_chamfer=0.0)
    return compute_loss._torchdynamo_orig_callable, [
        (bin_edges, pred, depth, args_chamfer),
        (bin_edges, pred, depth, args_no_chamfer),
    ]
