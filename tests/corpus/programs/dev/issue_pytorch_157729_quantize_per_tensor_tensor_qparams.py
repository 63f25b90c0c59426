"""`torch.quantize_per_tensor` with tensor scale / zero_point (no fake impl for the tensor_qparams overload).

Source: https://github.com/pytorch/pytorch/issues/157729
Kept: `fn(x, scale, zero_point)`, the 0-d tensor qparams, the `requires_grad` input built from them and
`torch.compile(backend="eager", fullgraph=True)(fn)`.
Simplified: nothing.
"""
import torch


def fn(x, scale, zero_point):
    return torch.quantize_per_tensor(x, scale, zero_point, torch.quint8)


def main():
    scale = torch.tensor(2.)
    zero_point = torch.tensor(10.)
    x = torch.rand((2, 2), requires_grad=True) * scale + zero_point
    return torch.compile(backend="eager", fullgraph=True)(fn)(x, scale, zero_point)


def make():
    torch.manual_seed(0)
    scale = torch.tensor(2.)
    zero_point = torch.tensor(10.)
    x = torch.rand((2, 2), requires_grad=True) * scale + zero_point
    return fn, [(x, scale, zero_point)]
