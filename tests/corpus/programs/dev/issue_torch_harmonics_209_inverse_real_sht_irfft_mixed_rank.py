"""torch-harmonics InverseRealSHT.forward (the other module the issue names): shape asserts on
(lmax, mmax), Legendre contraction, zeroing the imaginary part of the DC / Nyquist modes through
`.imag` setitem, irfft; compiled function applies it to a 2-D and a 3-D spectrum.

Source: NVIDIA/torch-harmonics#209 (https://github.com/NVIDIA/torch-harmonics/issues/209) -- lists
`assert x.shape[-2] == self.lmax` / `assert x.shape[-1] == self.mmax` in InverseRealSHT.forward
alongside RealSHT; code from
NVIDIA/torch-harmonics@0064e8e0f28d6a1df6026fb80836f1af6d3d043f:torch_harmonics/sht.py (InverseRealSHT).
Kept: forward verbatim (len(x.shape) ValueError guard, the two asserts, view_as_real, out_shape
edits, zeros, two einsums into xs[..., 0] / xs[..., 1], view_as_complex, `x[..., 0].imag = 0.0`,
the nlon-even Nyquist branch, irfft with n=self.nlon) and a reporter-style
`@torch.compile def fwd_mixed(x2d, x3d)`.
Simplified: the associated Legendre precompute is replaced by a seeded random "pct" buffer of shape
(mmax, lmax, nlat); nlat 8, nlon 16, lmax 5, mmax 9 (so the Nyquist branch runs); CPU float32.
"""
import torch
import torch.nn as nn
import torch.fft


class InverseRealSHT(nn.Module):

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

        # precompute associated Legendre polynomials
        pct = torch.randn(self.mmax, self.lmax, self.nlat) / self.lmax

        # register buffer
        self.register_buffer("pct", pct, persistent=False)

    def forward(self, x: torch.Tensor):

        if len(x.shape) < 2:
            raise ValueError(f"Expected tensor with at least 2 dimensions but got {len(x.shape)} instead")

        assert x.shape[-2] == self.lmax
        assert x.shape[-1] == self.mmax

        # Evaluate associated Legendre functions on the output nodes
        x = torch.view_as_real(x)

        # prepare output
        out_shape = list(x.size())
        out_shape[-3] = self.nlat
        out_shape[-2] = self.mmax
        xs = torch.zeros(out_shape, dtype=x.dtype, device=x.device)

        # legendre transformation
        xs[..., 0] = torch.einsum("...lm,mlk->...km", x[..., 0], self.pct.to(x.dtype))
        xs[..., 1] = torch.einsum("...lm,mlk->...km", x[..., 1], self.pct.to(x.dtype))

        # apply the inverse (real) FFT
        x = torch.view_as_complex(xs)

        # ensure that imaginary part of 0 and nyquist components are zero
        # this is important because not all backend algorithms provided through the
        # irfft interface ensure that
        x[..., 0].imag = 0.0
        if (self.nlon % 2 == 0) and (self.nlon // 2 < self.mmax):
            x[..., self.nlon // 2].imag = 0.0

        x = torch.fft.irfft(x, n=self.nlon, dim=-1, norm="forward")

        return x


torch.manual_seed(0)
isht = InverseRealSHT(8, 16, lmax=5, mmax=9, grid='equiangular')


@torch.compile
def fwd_mixed(x2d, x3d):
    return isht(x2d), isht(x3d)


def make():
    torch.manual_seed(0)
    x2d = torch.randn(5, 9, dtype=torch.complex64)
    x3d = torch.randn(3, 5, 9, dtype=torch.complex64)
    return fwd_mixed._torchdynamo_orig_callable, [(x2d, x3d)]
