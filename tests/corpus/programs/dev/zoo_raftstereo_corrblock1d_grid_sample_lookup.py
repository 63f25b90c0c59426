"""RAFT-Stereo `CorrBlock1D`: all-pairs 1D correlation pyramid built with avg_pool2d, then looked up around the current disparity with `bilinear_sampler` (grid_sample, an `if H > 1` on a static shape).

Source: princeton-vl/RAFT-Stereo@6068c1a26f84f8132de10f60b2bc0ce61568e085:core/corr.py:110-156
Also: core/utils/utils.py:59-80 (bilinear_sampler, coords_grid) and
core/raft_stereo.py:46-53,100-123 (initialize_flow, the corr_fn(coords1) refinement loop).
Kept: CorrBlock1D, bilinear_sampler, coords_grid verbatim; the loop that detaches coords1,
indexes the volume and applies a delta with the epipolar `delta_flow[:,1] = 0.0`.
Simplified: the update block is a single 1x1 conv on the correlation features; feature maps
of 8 channels at 4x6, 2 levels of radius 2, 3 iterations.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def bilinear_sampler(img, coords, mode='bilinear', mask=False):
    """ Wrapper for grid_sample, uses pixel coordinates """
    H, W = img.shape[-2:]
    xgrid, ygrid = coords.split([1,1], dim=-1)
    xgrid = 2*xgrid/(W-1) - 1
    if H > 1:
        ygrid = 2*ygrid/(H-1) - 1

    grid = torch.cat([xgrid, ygrid], dim=-1)
    img = F.grid_sample(img, grid, align_corners=True)

    if mask:
        mask = (xgrid > -1) & (ygrid > -1) & (xgrid < 1) & (ygrid < 1)
        return img, mask.float()

    return img


def coords_grid(batch, ht, wd):
    coords = torch.meshgrid(torch.arange(ht), torch.arange(wd))
    coords = torch.stack(coords[::-1], dim=0).float()
    return coords[None].repeat(batch, 1, 1, 1)


class CorrBlock1D:
    def __init__(self, fmap1, fmap2, num_levels=4, radius=4):
        self.num_levels = num_levels
        self.radius = radius
        self.corr_pyramid = []

        # all pairs correlation
        corr = CorrBlock1D.corr(fmap1, fmap2)

        batch, h1, w1, _, w2 = corr.shape
        corr = corr.reshape(batch*h1*w1, 1, 1, w2)

        self.corr_pyramid.append(corr)
        for i in range(self.num_levels):
            corr = F.avg_pool2d(corr, [1,2], stride=[1,2])
            self.corr_pyramid.append(corr)

    def __call__(self, coords):
        r = self.radius
        coords = coords[:, :1].permute(0, 2, 3, 1)
        batch, h1, w1, _ = coords.shape

        out_pyramid = []
        for i in range(self.num_levels):
            corr = self.corr_pyramid[i]
            dx = torch.linspace(-r, r, 2*r+1)
            dx = dx.view(2*r+1, 1).to(coords.device)
            x0 = dx + coords.reshape(batch*h1*w1, 1, 1, 1) / 2**i
            y0 = torch.zeros_like(x0)

            coords_lvl = torch.cat([x0,y0], dim=-1)
            corr = bilinear_sampler(corr, coords_lvl)
            corr = corr.view(batch, h1, w1, -1)
            out_pyramid.append(corr)

        out = torch.cat(out_pyramid, dim=-1)
        return out.permute(0, 3, 1, 2).contiguous().float()

    @staticmethod
    def corr(fmap1, fmap2):
        B, D, H, W1 = fmap1.shape
        _, _, _, W2 = fmap2.shape
        fmap1 = fmap1.view(B, D, H, W1)
        fmap2 = fmap2.view(B, D, H, W2)
        corr = torch.einsum('aijk,aijh->ajkh', fmap1, fmap2)
        corr = corr.reshape(B, H, W1, 1, W2).contiguous()
        return corr / torch.sqrt(torch.tensor(D).float())


class Args:
    corr_radius = 2
    corr_levels = 2


class DisparityRefiner(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        cor_planes = args.corr_levels * (2 * args.corr_radius + 1)
        self.flow_head = nn.Conv2d(cor_planes + 2, 2, 1)

    def initialize_flow(self, img):
        """ Flow is represented as difference between two coordinate grids flow = coords1 - coords0"""
        N, _, H, W = img.shape

        coords0 = coords_grid(N, H, W).to(img.device)
        coords1 = coords_grid(N, H, W).to(img.device)

        return coords0, coords1

    def forward(self, fmap1, fmap2, iters=3, flow_init=None):
        corr_fn = CorrBlock1D(fmap1.float(), fmap2.float(), radius=self.args.corr_radius, num_levels=self.args.corr_levels)
        coords0, coords1 = self.initialize_flow(fmap1)

        if flow_init is not None:
            coords1 = coords1 + flow_init

        flow_predictions = []
        for itr in range(iters):
            coords1 = coords1.detach()
            corr = corr_fn(coords1) # index correlation volume
            flow = coords1 - coords0
            delta_flow = self.flow_head(torch.cat([corr, flow], dim=1))

            # in stereo mode, project flow onto epipolar
            delta_flow[:,1] = 0.0

            coords1 = coords1 + delta_flow
            flow_predictions.append((coords1 - coords0)[:, :1])
        return flow_predictions


def make():
    torch.manual_seed(0)
    model = DisparityRefiner(Args())
    fmap1 = torch.randn(1, 8, 4, 6)
    fmap2 = torch.randn(1, 8, 4, 6)
    flow_init = torch.zeros(1, 2, 4, 6)
    return model, [(fmap1, fmap2), (fmap1, fmap2, 2, flow_init)]


refiner = torch.compile(DisparityRefiner(Args()))
