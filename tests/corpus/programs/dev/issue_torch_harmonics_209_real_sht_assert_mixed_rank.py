"""torch-harmonics RealSHT.forward's shape asserts (`x.shape[-2] == self.nlat`) in a compiled
function that calls the same SHT module on a 2-D and a 3-D input.

Source: NVIDIA/torch-harmonics#209 (https://github.com/NVIDIA/torch-harmonics/issues/209); code from
NVIDIA/torch-harmonics@0064e8e0f28d6a1df6026fb80836f1af6d3d043f:torch_harmonics/sht.py (RealSHT).
Kept: RealSHT.__init__'s attributes and non-persistent "weights" buffer, forward verbatim (dim
ValueError guard, the two asserts, rfft * 2*pi, view_as_real, out_shape list edits, zeros,
the two einsum contractions into xout[..., 0] / xout[..., 1], view_as_complex) and the reporter's
`@torch.compile def fwd_mixed(x2d, x3d): return sht(x2d), sht(x3d)`.
Simplified: the Legendre/quadrature precompute (truncate_sht, _precompute_legpoly,
clenshaw_curtiss_weights) is replaced by a seeded random weights buffer of the same
(mmax, lmax, nlat) shape; nlat 8, nlon 16, lmax = mmax = 5; float32 on CPU.
"""
import torch
import torch.nn as nn
import torch.fft


class RealSHT(nn.Module):

    def __init__(self, nlat, nlon, lmax=None, mmax=None, grid="equiangular", norm="ortho", csphase=True):

        super().__init__()

        self.nlat = nlat
        self.nlon = nlon
        self.grid = grid
        self.norm = norm
        self.csphase = csphase

        # determine maximum degrees based on triangular truncation
        self.lmax = lmax or nlat
        self.mmax = mmax or (nlon // 2 + 1)

        # combine quadrature weights with the legendre weights
        weights = torch.randn(self.mmax, self.lmax, self.nlat) / self.nlat

        # remember quadrature weights
        self.register_buffer("weights", weights, persistent=False)

    def forward(self, x: torch.Tensor):

        if x.dim() < 2:
            raise ValueError(f"Expected tensor with at least 2 dimensions but got {x.dim()} instead")

        assert x.shape[-2] == self.nlat
        assert x.shape[-1] == self.nlon

        # apply real fft in the longitudinal direction
        x = 2.0 * torch.pi * torch.fft.rfft(x, dim=-1, norm="forward")

        # do the Legendre-Gauss quadrature
        x = torch.view_as_real(x)

        # distributed contraction: fork
        out_shape = list(x.size())
        out_shape[-3] = self.lmax
        out_shape[-2] = self.mmax
        xout = torch.zeros(out_shape, dtype=x.dtype, device=x.device)

        # contraction
        xout[..., 0] = torch.einsum("...km,mlk->...lm", x[..., : self.mmax, 0], self.weights.to(x.dtype))
        xout[..., 1] = torch.einsum("...km,mlk->...lm", x[..., : self.mmax, 1], self.weights.to(x.dtype))
        x = torch.view_as_complex(xout)

        return x


torch.manual_seed(0)
sht = RealSHT(8, 16, lmax=5, mmax=5, grid='equiangular')


@torch.compile
def fwd_mixed(x2d, x3d):
    return sht(x2d), sht(x3d)


def make():
    torch.manual_seed(0)
    x2d = torch.randn(8, 16)
    x3d = torch.randn(3, 8, 16)
    return fwd_mixed._torchdynamo_orig_callable, [(x2d, x3d)]
