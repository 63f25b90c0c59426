"""PIPS correlation pyramid for one refinement iteration: build a `CorrBlock` (plain Python class holding avg-pooled feature pyramids), correlate the track features, sum upsampled score maps, then sample (2r+1)^2 windows with grid_sample around the current coordinates.

Source: aharley/pips@a05a120bd3896eeb1ab28346c00e78543ff83df5:nets/pips.py:313-398,459-517
Kept: bilinear_sampler, coords_grid, CorrBlock (__init__ pyramid loop,
`sample` with linspace/meshgrid windows, `corr` storing `self.corrs_pyramid`)
verbatim, and the part of the Pips.forward iteration loop that uses them
(`fcorr_fn = CorrBlock(...)`, `fcorr_fn.corr(ffeats)`, the fcp accumulation
over `self.corr_levels` with F.interpolate, `fcorr_fn.sample(coords)`, the
B*N x S x LRR permute) inside a small `PipsCorr` module with the same
corr_levels/corr_radius attributes.
Simplified: the BasicEncoder and MLPMixer delta block are dropped: feature maps
and track features are inputs; one iteration; B=1, S=3, N=4, C=8, 16x16 maps,
corr_levels 3, radius 2.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def bilinear_sampler(img, coords, mode='bilinear', mask=False):
    """ Wrapper for grid_sample, uses pixel coordinates """
    H, W = img.shape[-2:]
    xgrid, ygrid = coords.split([1,1], dim=-1)
    # go to 0,1 then 0,2 then -1,1
    xgrid = 2*xgrid/(W-1) - 1
    ygrid = 2*ygrid/(H-1) - 1

    grid = torch.cat([xgrid, ygrid], dim=-1)
    img = F.grid_sample(img, grid, align_corners=True)

    if mask:
        mask = (xgrid > -1) & (ygrid > -1) & (xgrid < 1) & (ygrid < 1)
        return img, mask.float()

    return img

def coords_grid(batch, ht, wd):
    coords = torch.meshgrid(torch.arange(ht), torch.arange(wd), indexing='ij')
    coords = torch.stack(coords[::-1], dim=0).float()
    return coords[None].repeat(batch, 1, 1, 1)

class CorrBlock:
    def __init__(self, fmaps, num_levels=4, radius=4):
        B, S, C, H, W = fmaps.shape
        # print('fmaps', fmaps.shape)
        self.S, self.C, self.H, self.W = S, C, H, W

        self.num_levels = num_levels
        self.radius = radius
        self.fmaps_pyramid = []
        # print('fmaps', fmaps.shape)

        self.fmaps_pyramid.append(fmaps)
        for i in range(self.num_levels-1):
            fmaps_ = fmaps.reshape(B*S, C, H, W)
            fmaps_ = F.avg_pool2d(fmaps_, 2, stride=2)
            _, _, H, W = fmaps_.shape
            fmaps = fmaps_.reshape(B, S, C, H, W)
            self.fmaps_pyramid.append(fmaps)
            # print('fmaps', fmaps.shape)

    def sample(self, coords):
        r = self.radius
        B, S, N, D = coords.shape
        assert(D==2)

        x0 = coords[:,0,:,0].round().clamp(0, self.W-1).long()
        y0 = coords[:,0,:,1].round().clamp(0, self.H-1).long()

        H, W = self.H, self.W
        out_pyramid = []
        for i in range(self.num_levels):
            corrs = self.corrs_pyramid[i] # B, S, N, H, W
            _, _, _, H, W = corrs.shape
            
            dx = torch.linspace(-r, r, 2*r+1)
            dy = torch.linspace(-r, r, 2*r+1)
            delta = torch.stack(torch.meshgrid(dy, dx, indexing='ij'), axis=-1).to(coords.device) 

            centroid_lvl = coords.reshape(B*S*N, 1, 1, 2) / 2**i
            delta_lvl = delta.view(1, 2*r+1, 2*r+1, 2)
            coords_lvl = centroid_lvl + delta_lvl

            corrs = bilinear_sampler(corrs.reshape(B*S*N, 1, H, W), coords_lvl)
            corrs = corrs.view(B, S, N, -1)
            out_pyramid.append(corrs)

        out = torch.cat(out_pyramid, dim=-1) # B, S, N, LRR*2
        return out.contiguous().float()

    def corr(self, targets):
        B, S, N, C = targets.shape
        assert(C==self.C)
        assert(S==self.S)

        fmap1 = targets

        self.corrs_pyramid = []
        for fmaps in self.fmaps_pyramid:
            _, _, _, H, W = fmaps.shape
            fmap2s = fmaps.view(B, S, C, H*W)
            corrs = torch.matmul(fmap1, fmap2s)
            corrs = corrs.view(B, S, N, H, W) 
            corrs = corrs / torch.sqrt(torch.tensor(C).float())
            self.corrs_pyramid.append(corrs)



class PipsCorr(nn.Module):
    def __init__(self, corr_levels=4, corr_radius=3):
        super().__init__()
        self.corr_levels = corr_levels
        self.corr_radius = corr_radius

    def forward(self, fmaps, ffeats, coords):
        B, S, C, H8, W8 = fmaps.shape
        N = coords.shape[2]
        device = fmaps.device

        fcorr_fn = CorrBlock(fmaps, num_levels=self.corr_levels, radius=self.corr_radius)

        coords = coords.detach()

        fcorr_fn.corr(ffeats)

        fcp = torch.zeros((B,S,N,H8,W8), dtype=torch.float32, device=device) # B,S,N,H8,W8
        for cr in range(self.corr_levels):
            fcp_ = fcorr_fn.corrs_pyramid[cr] # B,S,N,?,? (depending on scale)
            _,_,_,H_,W_ = fcp_.shape
            fcp_ = fcp_.reshape(B*S,N,H_,W_)
            fcp_ = F.interpolate(fcp_, (H8, W8), mode='bilinear', align_corners=True)
            fcp = fcp + fcp_.reshape(B,S,N,H8,W8)

        fcorrs = fcorr_fn.sample(coords) # B, S, N, LRR
        LRR = fcorrs.shape[3]

        # for mixer, i want everything in the format B*N, S, C
        fcorrs_ = fcorrs.permute(0, 2, 1, 3).reshape(B*N, S, LRR)
        return fcp, fcorrs_


corr_module = torch.compile(PipsCorr(corr_levels=3, corr_radius=2))


def make():
    torch.manual_seed(0)
    B, S, N, C, H8, W8 = 1, 3, 4, 8, 16, 16
    fmaps = torch.randn(B, S, C, H8, W8)
    ffeats = torch.randn(B, S, N, C)
    coords = torch.rand(B, S, N, 2) * 15.0
    return PipsCorr(corr_levels=3, corr_radius=2), [(fmaps, ffeats, coords)]
