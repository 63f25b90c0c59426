"""RAFT-Stereo `PytorchAlternateCorrBlock1D` (corr_implementation="alt"): per-level meshgrid offsets written into a cloned centroid tensor, grid_sample per offset slice in a Python loop over `grid.unbind(3)`.

Source: princeton-vl/RAFT-Stereo@6068c1a26f84f8132de10f60b2bc0ce61568e085:core/corr.py:64-107
Also: core/raft_stereo.py:90-110 (corr_block selection by args.corr_implementation).
Kept: PytorchAlternateCorrBlock1D verbatim (torch.meshgrid without indexing, in-place
`centroid_lvl[...,0] = ... / 2**i`, torch.tensor(D) normalisation); the corr_implementation
dispatch and the `coords1.detach()` lookup.
Simplified: feature maps of 4 channels at 3x5, 2 levels of radius 1, coords given directly.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class PytorchAlternateCorrBlock1D:
    def __init__(self, fmap1, fmap2, num_levels=4, radius=4):
        self.num_levels = num_levels
        self.radius = radius
        self.corr_pyramid = []
        self.fmap1 = fmap1
        self.fmap2 = fmap2

    def corr(self, fmap1, fmap2, coords):
        B, D, H, W = fmap2.shape
        # map grid coordinates to [-1,1]
        xgrid, ygrid = coords.split([1,1], dim=-1)
        xgrid = 2*xgrid/(W-1) - 1
        ygrid = 2*ygrid/(H-1) - 1

        grid = torch.cat([xgrid, ygrid], dim=-1)
        output_corr = []
        for grid_slice in grid.unbind(3):
            fmapw_mini = F.grid_sample(fmap2, grid_slice, align_corners=True)
            corr = torch.sum(fmapw_mini * fmap1, dim=1)
            output_corr.append(corr)
        corr = torch.stack(output_corr, dim=1).permute(0,2,3,1)

        return corr / torch.sqrt(torch.tensor(D).float())

    def __call__(self, coords):
        r = self.radius
        coords = coords.permute(0, 2, 3, 1)
        batch, h1, w1, _ = coords.shape
        fmap1 = self.fmap1
        fmap2 = self.fmap2
        out_pyramid = []
        for i in range(self.num_levels):
            dx = torch.zeros(1)
            dy = torch.linspace(-r, r, 2*r+1)
            delta = torch.stack(torch.meshgrid(dy, dx), axis=-1).to(coords.device)
            centroid_lvl = coords.reshape(batch, h1, w1, 1, 2).clone()
            centroid_lvl[...,0] = centroid_lvl[...,0] / 2**i
            coords_lvl = centroid_lvl + delta.view(-1, 2)
            corr = self.corr(fmap1, fmap2, coords_lvl)
            fmap2 = F.avg_pool2d(fmap2, [1, 2], stride=[1, 2])
            out_pyramid.append(corr)
        out = torch.cat(out_pyramid, dim=-1)
        return out.permute(0, 3, 1, 2).contiguous().float()


class Args:
    corr_implementation = "alt"
    corr_radius = 1
    corr_levels = 2


class CorrLookup(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args

    def forward(self, fmap1, fmap2, coords1):
        if self.args.corr_implementation == "alt": # More memory efficient than reg
            corr_block = PytorchAlternateCorrBlock1D
            fmap1, fmap2 = fmap1.float(), fmap2.float()
        else:
            raise NotImplementedError(self.args.corr_implementation)
        corr_fn = corr_block(fmap1, fmap2, radius=self.args.corr_radius, num_levels=self.args.corr_levels)
        coords1 = coords1.detach()
        return corr_fn(coords1)


lookup = torch.compile(CorrLookup(Args()), dynamic=False)


def make():
    torch.manual_seed(0)
    fmap1 = torch.randn(1, 4, 3, 5)
    fmap2 = torch.randn(1, 4, 3, 5)
    ys, xs = torch.meshgrid(torch.arange(3), torch.arange(5), indexing="ij")
    coords1 = torch.stack([xs, ys], dim=0).float()[None] + 0.3
    return CorrLookup(Args()), [(fmap1, fmap2, coords1)]
