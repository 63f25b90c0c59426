"""zuko's MonotonicRQSTransform built per call from a conditioner's output: knots from softmax/cumsum, a `torch.sum(seq < value[..., None])` searchsorted, `gather` on broadcast knot tensors, and `torch.where(mask, y, x)` outside the bound (no data-dependent Python).

Source: probabilists/zuko@1063ae415bcd53bfad1da3a27b5519491365afdd:zuko/transforms.py:449-565
Also: zuko/utils.py:212-243 (broadcast).
Kept: MonotonicRQSTransform (constructor, bins, bin, searchsorted, _call,
call_and_ladj) and broadcast verbatim; it subclasses
torch.distributions.Transform as in zuko.
Simplified: the lazy MaskedAutoregressiveTransform is replaced by a
coupling-style module whose Linear conditioner yields widths, heights and
derivatives for the transformed half, as NSF's `shapes=[(K,), (K,), (K-1,)]`.
"""
import math
from typing import Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import LongTensor, Tensor
from torch.distributions import Transform, constraints


def broadcast(*tensors: Tensor, ignore: int | Sequence[int] = 0) -> list[Tensor]:
    if isinstance(ignore, int):
        ignore = [ignore] * len(tensors)

    dims = [t.dim() - i for t, i in zip(tensors, ignore, strict=True)]
    common = torch.broadcast_shapes(*(t.shape[:i] for t, i in zip(tensors, dims, strict=True)))

    return [
        torch.broadcast_to(t, common + t.shape[i:]) for t, i in zip(tensors, dims, strict=True)
    ]


class MonotonicRQSTransform(Transform):
    domain = constraints.real
    codomain = constraints.real
    bijective = True
    sign = +1

    def __init__(
        self,
        widths: Tensor,
        heights: Tensor,
        derivatives: Tensor,
        bound: float = 5.0,
        slope: float = 1e-3,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)

        widths = widths / (1 + abs(2 * widths / math.log(slope)))
        heights = heights / (1 + abs(2 * heights / math.log(slope)))
        derivatives = derivatives / (1 + abs(derivatives / math.log(slope)))

        widths = F.pad(F.softmax(widths, dim=-1), (1, 0), value=0)
        heights = F.pad(F.softmax(heights, dim=-1), (1, 0), value=0)
        derivatives = F.pad(derivatives, (1, 1), value=0)

        self.horizontal = bound * (2 * torch.cumsum(widths, dim=-1) - 1)
        self.vertical = bound * (2 * torch.cumsum(heights, dim=-1) - 1)
        self.derivatives = torch.exp(derivatives)

    @property
    def bins(self) -> int:
        return self.horizontal.shape[-1] - 1

    def bin(self, k: LongTensor) -> tuple[Tensor, ...]:
        mask = torch.logical_and(0 <= k, k < self.bins)

        k = k % self.bins
        k0_k1 = torch.stack((k, k + 1))

        k0_k1, hs, vs, ds = broadcast(
            k0_k1[..., None],
            self.horizontal,
            self.vertical,
            self.derivatives,
            ignore=1,
        )

        x0, x1 = hs.gather(-1, k0_k1).squeeze(dim=-1)
        y0, y1 = vs.gather(-1, k0_k1).squeeze(dim=-1)
        d0, d1 = ds.gather(-1, k0_k1).squeeze(dim=-1)

        s = (y1 - y0) / (x1 - x0)

        return mask, x0, x1, y0, y1, d0, d1, s

    @staticmethod
    def searchsorted(seq: Tensor, value: Tensor) -> LongTensor:
        return torch.sum(seq < value[..., None], dim=-1)

    def _call(self, x: Tensor) -> Tensor:
        k = self.searchsorted(self.horizontal, x) - 1
        mask, x0, x1, y0, y1, d0, d1, s = self.bin(k)

        z = mask * (x - x0) / (x1 - x0)
        y = y0 + (y1 - y0) * (s * z**2 + d0 * z * (1 - z)) / (s + (d0 + d1 - 2 * s) * z * (1 - z))

        return torch.where(mask, y, x)

    def call_and_ladj(self, x: Tensor) -> tuple[Tensor, Tensor]:
        k = self.searchsorted(self.horizontal, x) - 1
        mask, x0, x1, y0, y1, d0, d1, s = self.bin(k)

        z = mask * (x - x0) / (x1 - x0)
        y = y0 + (y1 - y0) * (s * z**2 + d0 * z * (1 - z)) / (s + (d0 + d1 - 2 * s) * z * (1 - z))

        jacobian = (
            s**2
            * (2 * s * z * (1 - z) + d0 * (1 - z) ** 2 + d1 * z**2)
            / (s + (d0 + d1 - 2 * s) * z * (1 - z)) ** 2
        )

        return torch.where(mask, y, x), mask * jacobian.log()


class SplineCoupling(nn.Module):
    def __init__(self, features=4, bins=8, slope=1e-3):
        super().__init__()
        self.split = features // 2
        self.bins = bins
        self.slope = slope
        self.shapes = [(bins,), (bins,), (bins - 1,)]
        self.total = sum(s[0] for s in self.shapes)
        self.hyper = nn.Linear(self.split, (features - self.split) * self.total)

    def forward(self, x):
        x_a, x_b = x[..., : self.split], x[..., self.split :]
        phi = self.hyper(x_a).unflatten(-1, (x_b.shape[-1], self.total))
        phi = phi.split([s[0] for s in self.shapes], dim=-1)
        transform = MonotonicRQSTransform(*phi, slope=self.slope)
        y_b, ladj = transform.call_and_ladj(x_b)
        return torch.cat((x_a, y_b), dim=-1), ladj.sum(dim=-1)


def make():
    torch.manual_seed(0)
    x = torch.randn(3, 4) * 3.0
    x[0, 3] = 7.5  # outside the spline bound: identity branch of torch.where
    return SplineCoupling(), [(x,), (x[:1],)]


flow_layer = torch.compile(SplineCoupling(), mode="reduce-overhead")
