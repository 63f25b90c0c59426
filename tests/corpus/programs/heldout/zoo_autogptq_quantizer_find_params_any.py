"""AutoGPTQ Quantizer: `find_params` branches on `if torch.any(tmp)` and `if self.maxq < 0` (a tensor buffer), runs the MSE grid search with `if torch.any(tmp)` per shrink step, and `quantize` asks `self.ready()`, i.e. `torch.all(self.scale != 0)`.

Source: AutoGPTQ/AutoGPTQ@3ef391f3b0f7e9da7dfed16f940a96d7e427f0d3:auto_gptq/quantization/quantizer.py:1-141
Kept: quantize(), Quantizer (buffers, configure, find_params, quantize, enabled,
ready) verbatim.
Simplified: the compiled entry is the find_params + quantize pair that
GPTQ.fasterquant runs per group (auto_gptq/quantization/gptq.py); grid 10 instead
of 100; 4x8 weights.
"""
from logging import getLogger

import torch
import torch.nn as nn

logger = getLogger(__name__)


def quantize(x, scale, zero, maxq):
    if maxq < 0:
        return (x > scale / 2).float() * scale + (x < zero / 2).float() * zero
    q = torch.clamp(torch.round(x / scale) + zero, 0, maxq)
    return scale * (q - zero)


class Quantizer(nn.Module):
    def __init__(self, shape=1):
        super(Quantizer, self).__init__()
        self.register_buffer("maxq", torch.tensor(0))
        self.register_buffer("scale", torch.zeros(shape))
        self.register_buffer("zero", torch.zeros(shape))

    def configure(
        self,
        bits,
        perchannel=False,
        sym=True,
        mse=False,
        norm=2.4,
        grid=100,
        maxshrink=0.8,
        trits=False,
    ):
        self.maxq = torch.tensor(2**bits - 1)
        self.perchannel = perchannel
        self.sym = sym
        self.mse = mse
        self.norm = norm
        self.grid = grid
        self.maxshrink = maxshrink
        if trits:
            self.maxq = torch.tensor(-1)

    def find_params(self, x, weight=False):
        dev = x.device
        self.maxq = self.maxq.to(dev)

        shape = x.shape
        if self.perchannel:
            if weight:
                x = x.flatten(1)
            else:
                if len(shape) == 4:
                    x = x.permute([1, 0, 2, 3])
                    x = x.flatten(1)
                if len(shape) == 3:
                    x = x.reshape((-1, shape[-1])).t()
                if len(shape) == 2:
                    x = x.t()
        else:
            x = x.flatten().unsqueeze(0)

        tmp = torch.zeros(x.shape[0], device=dev)
        xmin = torch.minimum(x.min(1)[0], tmp)
        xmax = torch.maximum(x.max(1)[0], tmp)

        if self.sym:
            xmax = torch.maximum(torch.abs(xmin), xmax)
            tmp = xmin < 0
            if torch.any(tmp):
                xmin[tmp] = -xmax[tmp]
        tmp = (xmin == 0) & (xmax == 0)
        xmin[tmp] = -1
        xmax[tmp] = +1

        if self.maxq < 0:
            self.scale = xmax
            self.zero = xmin
        else:
            self.scale = (xmax - xmin) / self.maxq
            if self.sym:
                self.zero = torch.full_like(self.scale, (self.maxq + 1) / 2)
            else:
                self.zero = torch.round(-xmin / self.scale)

        if self.mse:
            best = torch.full([x.shape[0]], float("inf"), device=dev)
            for i in range(int(self.maxshrink * self.grid)):
                p = 1 - i / self.grid
                xmin1 = p * xmin
                xmax1 = p * xmax
                scale1 = (xmax1 - xmin1) / self.maxq
                zero1 = torch.round(-xmin1 / scale1) if not self.sym else self.zero
                q = quantize(x, scale1.unsqueeze(1), zero1.unsqueeze(1), self.maxq)
                q -= x
                q.abs_()
                q.pow_(self.norm)
                err = torch.sum(q, 1)
                tmp = err < best
                if torch.any(tmp):
                    best[tmp] = err[tmp]
                    self.scale[tmp] = scale1[tmp]
                    self.zero[tmp] = zero1[tmp]
        if not self.perchannel:
            if weight:
                tmp = shape[0]
            else:
                tmp = shape[1] if len(shape) != 3 else shape[2]
            self.scale = self.scale.repeat(tmp)
            self.zero = self.zero.repeat(tmp)

        if weight:
            shape = [-1] + [1] * (len(shape) - 1)
            self.scale = self.scale.reshape(shape)
            self.zero = self.zero.reshape(shape)
            return
        if len(shape) == 4:
            self.scale = self.scale.reshape((1, -1, 1, 1))
            self.zero = self.zero.reshape((1, -1, 1, 1))
        if len(shape) == 3:
            self.scale = self.scale.reshape((1, 1, -1))
            self.zero = self.zero.reshape((1, 1, -1))
        if len(shape) == 2:
            self.scale = self.scale.unsqueeze(0)
            self.zero = self.zero.unsqueeze(0)

    def quantize(self, x):
        if self.ready():
            return quantize(x, self.scale, self.zero, self.maxq)
        return x

    def enabled(self):
        return self.maxq > 0

    def ready(self):
        return torch.all(self.scale != 0)


__all__ = ["Quantizer"]


@torch.compile
def quantize_group(quantizer: Quantizer, W: torch.Tensor):
    quantizer.find_params(W, weight=True)
    return quantizer.quantize(W)


def build_quantizer(bits=4, perchannel=True, sym=True, mse=False, trits=False):
    quantizer = Quantizer()
    quantizer.configure(bits, perchannel=perchannel, sym=sym, mse=mse, grid=10, trits=trits)
    return quantizer


def make():
    torch.manual_seed(0)
    W = torch.randn(4, 8)
    W_pos = W.abs()
    W_zero_row = W.clone()
    W_zero_row[1] = 0.0
    return quantize_group._torchdynamo_orig_callable, [
        (build_quantizer(), W),
        (build_quantizer(sym=True), W_pos),
        (build_quantizer(sym=False, mse=True), W_zero_row),
        (build_quantizer(perchannel=False, trits=True), W),
        (build_quantizer(), torch.zeros(4, 8)),
        (build_quantizer(perchannel=False, sym=False, trits=True), -W_pos),
    ]
