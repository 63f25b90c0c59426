"""NequIP's radial edge embedding: BesselBasis divides `sin(bessel_weights * r / r_max)` by r and PolynomialCutoff multiplies by `(x < 1.0)`; the envelope is applied to `r / r_max` (no data-dependent Python).

Source: mir-group/nequip@04b5bfc4aa5e4bdd93a393596ffbba173ae2eeb0:nequip/nn/radial_basis.py:45-95
Also: nequip/nn/embedding/cutoffs.py@32b6751d1ca8a6076ff53cbfb3f32c47935712fc:4-30 (PolynomialCutoff).
Kept: BesselBasis and PolynomialCutoff verbatim, including the class-level
annotations and the trainable/buffer choice.
Simplified: the RadialBasisEdgeEncoding wrapper is reduced to its forward
(basis(r) * cutoff(r / r_max)[:, None]) on a plain edge-length tensor; the
AtomicDataDict plumbing is dropped.
"""
import math

import torch
from torch import nn


class BesselBasis(nn.Module):
    r_max: float
    prefactor: float

    def __init__(self, r_max, num_basis=8, trainable=True):
        super(BesselBasis, self).__init__()

        self.trainable = trainable
        self.num_basis = num_basis

        self.r_max = float(r_max)
        self.prefactor = 2.0 / self.r_max

        bessel_weights = (
            torch.linspace(start=1.0, end=num_basis, steps=num_basis) * math.pi
        )
        if self.trainable:
            self.bessel_weights = nn.Parameter(bessel_weights)
        else:
            self.register_buffer("bessel_weights", bessel_weights)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        numerator = torch.sin(self.bessel_weights * x.unsqueeze(-1) / self.r_max)

        return self.prefactor * (numerator / x.unsqueeze(-1))


class PolynomialCutoff(torch.nn.Module):

    def __init__(self, p: float = 6):
        super().__init__()
        assert p >= 2.0
        self.p = float(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = 1.0
        out = out - (((self.p + 1.0) * (self.p + 2.0) / 2.0) * torch.pow(x, self.p))
        out = out + (self.p * (self.p + 2.0) * torch.pow(x, self.p + 1.0))
        out = out - ((self.p * (self.p + 1.0) / 2) * torch.pow(x, self.p + 2.0))
        return out * (x < 1.0)


class RadialBasisEdgeEncoding(nn.Module):
    def __init__(self, r_max=4.0, num_basis=8, trainable=True, polynomial_p=6):
        super().__init__()
        self.r_max = r_max
        self.basis = BesselBasis(r_max, num_basis=num_basis, trainable=trainable)
        self.cutoff = PolynomialCutoff(p=polynomial_p)

    def forward(self, edge_length: torch.Tensor) -> torch.Tensor:
        edge_length_embedded = (
            self.basis(edge_length) * self.cutoff(edge_length / self.r_max)[:, None]
        )
        return edge_length_embedded


def make():
    torch.manual_seed(0)
    lengths = torch.rand(7) * 5.0 + 0.1
    return RadialBasisEdgeEncoding(), [(lengths,), (lengths[:3],)]


edge_encoding = torch.compile(RadialBasisEdgeEncoding(), fullgraph=True)
