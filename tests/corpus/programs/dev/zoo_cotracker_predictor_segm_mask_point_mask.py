"""CoTracker CoTrackerPredictor: sparse tracking from a query grid filtered by a segmentation mask (`grid_pts[:, point_mask]` after `.cpu()` index lookups), a support grid, optional backward tracking merged through boolean masks, and a per-query correction loop.

Source: facebookresearch/co-tracker@82e02e8029753ad4ef13cf06be7f4fc5facdda4d:cotracker/predictor.py:14-209
Also: cotracker/models/core/model_utils.py:16-19 (smart_cat), 83-139 (get_points_on_a_grid).
Kept: CoTrackerPredictor.forward, _compute_sparse_tracks and _compute_backward_tracks
verbatim (interpolation to interp_shape, query rescaling with new_tensor, the
segm_mask point lookup with `.round().long().cpu()` and boolean column selection,
support grid concatenation, `tracks, visibilities, *_ = self.model.forward(...)`,
the visibility threshold, the per-query overwrite loop, the backward merge
`tracks[mask] = inv_tracks[mask]`); get_points_on_a_grid verbatim.
Simplified: build_cotracker's CoTracker3 network is replaced by a small stand-in
tracker (a conv feature map sampled at the queries with grid_sample, a linear head
for per-frame offsets and visibility logits) with the same call signature and output
tuple; the dense-track path is left out; interp_shape (64, 64), support grid 2,
video 1x3x3x12x12.
"""
from typing import Optional, Tuple

import torch
import torch.nn.functional as F


def smart_cat(tensor1, tensor2, dim):
    if tensor1 is None:
        return tensor2
    return torch.cat([tensor1, tensor2], dim=dim)


def get_points_on_a_grid(
    size: int,
    extent: Tuple[float, ...],
    center: Optional[Tuple[float, ...]] = None,
    device: Optional[torch.device] = torch.device("cpu"),
):
    if size == 1:
        return torch.tensor([extent[1] / 2, extent[0] / 2], device=device)[None, None]

    if center is None:
        center = [extent[0] / 2, extent[1] / 2]

    margin = extent[1] / 64
    range_y = (margin - extent[0] / 2 + center[0], extent[0] / 2 + center[0] - margin)
    range_x = (margin - extent[1] / 2 + center[1], extent[1] / 2 + center[1] - margin)
    grid_y, grid_x = torch.meshgrid(
        torch.linspace(*range_y, size, device=device),
        torch.linspace(*range_x, size, device=device),
        indexing="ij",
    )
    return torch.stack([grid_x, grid_y], dim=-1).reshape(1, -1, 2)


class StandInTracker(torch.nn.Module):
    """Same interface as CoTrackerThreeOffline.forward(video, queries, iters)."""

    def __init__(self, model_resolution=(64, 64), dim=8):
        super().__init__()
        self.model_resolution = model_resolution
        self.fnet = torch.nn.Conv2d(3, dim, 3, padding=1)
        self.head = torch.nn.Linear(dim, 3)

    def forward(self, video, queries, iters=4, is_train=False):
        B, T, C, H, W = video.shape
        fmaps = self.fnet(video.reshape(B * T, C, H, W))
        xy = queries[:, :, 1:]
        norm = xy.new_tensor([W - 1, H - 1])
        grid = (xy / norm * 2 - 1)[:, None].expand(B, T, -1, 2).reshape(B * T, 1, -1, 2)
        feats = F.grid_sample(fmaps, grid, align_corners=True)  # (B*T, dim, 1, N)
        feats = feats[:, :, 0].permute(0, 2, 1).reshape(B, T, -1, fmaps.shape[1])
        out = self.head(feats)
        tracks = xy[:, None] + out[..., :2]
        visibilities = torch.sigmoid(out[..., 2])
        confidence = torch.ones_like(visibilities)
        return tracks, visibilities, confidence, None


class CoTrackerPredictor(torch.nn.Module):
    def __init__(self, support_grid_size=2):
        super().__init__()
        self.v2 = False
        self.support_grid_size = support_grid_size
        model = StandInTracker()
        self.interp_shape = model.model_resolution
        self.model = model
        self.model.eval()

    @torch.no_grad()
    def forward(
        self,
        video,  # (B, T, 3, H, W)
        queries: torch.Tensor = None,
        segm_mask: torch.Tensor = None,  # Segmentation mask of shape (B, 1, H, W)
        grid_size: int = 0,
        grid_query_frame: int = 0,  # only for dense and regular grid tracks
        backward_tracking: bool = False,
    ):
        if queries is None and grid_size == 0:
            raise NotImplementedError("dense tracks are not part of this program")
        else:
            tracks, visibilities = self._compute_sparse_tracks(
                video,
                queries,
                segm_mask,
                grid_size,
                add_support_grid=(grid_size == 0 or segm_mask is not None),
                grid_query_frame=grid_query_frame,
                backward_tracking=backward_tracking,
            )

        return tracks, visibilities

    def _compute_sparse_tracks(
        self,
        video,
        queries,
        segm_mask=None,
        grid_size=0,
        add_support_grid=False,
        grid_query_frame=0,
        backward_tracking=False,
    ):
        B, T, C, H, W = video.shape

        video = video.reshape(B * T, C, H, W)
        video = F.interpolate(
            video, tuple(self.interp_shape), mode="bilinear", align_corners=True
        )
        video = video.reshape(B, T, 3, self.interp_shape[0], self.interp_shape[1])

        if queries is not None:
            B, N, D = queries.shape
            assert D == 3
            queries = queries.clone()
            queries[:, :, 1:] *= queries.new_tensor(
                [
                    (self.interp_shape[1] - 1) / (W - 1),
                    (self.interp_shape[0] - 1) / (H - 1),
                ]
            )
        elif grid_size > 0:
            grid_pts = get_points_on_a_grid(
                grid_size, self.interp_shape, device=video.device
            )
            if segm_mask is not None:
                segm_mask = F.interpolate(
                    segm_mask, tuple(self.interp_shape), mode="nearest"
                )
                point_mask = segm_mask[0, 0][
                    (grid_pts[0, :, 1]).round().long().cpu(),
                    (grid_pts[0, :, 0]).round().long().cpu(),
                ].bool()
                grid_pts = grid_pts[:, point_mask]

            queries = torch.cat(
                [torch.ones_like(grid_pts[:, :, :1]) * grid_query_frame, grid_pts],
                dim=2,
            ).repeat(B, 1, 1)

        if add_support_grid:
            grid_pts = get_points_on_a_grid(
                self.support_grid_size, self.interp_shape, device=video.device
            )
            grid_pts = torch.cat(
                [torch.zeros_like(grid_pts[:, :, :1]), grid_pts], dim=2
            )
            grid_pts = grid_pts.repeat(B, 1, 1)
            queries = torch.cat([queries, grid_pts], dim=1)

        tracks, visibilities, *_ = self.model.forward(
            video=video, queries=queries, iters=6
        )

        if backward_tracking:
            tracks, visibilities = self._compute_backward_tracks(
                video, queries, tracks, visibilities
            )
            if add_support_grid:
                queries[:, -self.support_grid_size**2 :, 0] = T - 1
        if add_support_grid:
            tracks = tracks[:, :, : -self.support_grid_size**2]
            visibilities = visibilities[:, :, : -self.support_grid_size**2]
        thr = 0.9
        visibilities = visibilities > thr

        # correct query-point predictions
        # see https://github.com/facebookresearch/co-tracker/issues/28

        # TODO: batchify
        for i in range(len(queries)):
            queries_t = queries[i, : tracks.size(2), 0].to(torch.int64)
            arange = torch.arange(0, len(queries_t))

            # overwrite the predictions with the query points
            tracks[i, queries_t, arange] = queries[i, : tracks.size(2), 1:]

            # correct visibilities, the query points should be visible
            visibilities[i, queries_t, arange] = True

        tracks *= tracks.new_tensor(
            [(W - 1) / (self.interp_shape[1] - 1), (H - 1) / (self.interp_shape[0] - 1)]
        )
        return tracks, visibilities

    def _compute_backward_tracks(self, video, queries, tracks, visibilities):
        inv_video = video.flip(1).clone()
        inv_queries = queries.clone()
        inv_queries[:, :, 0] = inv_video.shape[1] - inv_queries[:, :, 0] - 1

        inv_tracks, inv_visibilities, *_ = self.model(
            video=inv_video, queries=inv_queries, iters=6
        )

        inv_tracks = inv_tracks.flip(1)
        inv_visibilities = inv_visibilities.flip(1)
        arange = torch.arange(video.shape[1], device=queries.device)[None, :, None]

        mask = (arange < queries[:, None, :, 0]).unsqueeze(-1).repeat(1, 1, 1, 2)

        tracks[mask] = inv_tracks[mask]
        visibilities[mask[:, :, :, 0]] = inv_visibilities[mask[:, :, :, 0]]
        return tracks, visibilities


cotracker = torch.compile(CoTrackerPredictor())


def make():
    torch.manual_seed(0)
    video = torch.rand(1, 3, 3, 12, 12)
    queries = torch.tensor([[[0., 4., 5.], [1., 8., 2.], [2., 3., 9.]]])
    segm_mask = torch.zeros(1, 1, 12, 12)
    segm_mask[:, :, 2:9, 3:10] = 1.
    return CoTrackerPredictor(), [
        (video, queries),
        (video, None, segm_mask, 3, 0, True),
    ]
