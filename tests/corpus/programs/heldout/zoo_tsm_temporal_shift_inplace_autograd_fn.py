"""TSM TemporalShift with inplace=True: a custom autograd.Function that shifts through `.data`.

Source: mit-han-lab/temporal-shift-module@4759ad8da09fcd5dd00fe243ca046669f0e0576a:ops/temporal_shift.py:11-71,146-170
Kept: TemporalShift (prints in __init__, static shift() dispatching on inplace), InplaceShift.forward /
backward exactly (ctx.fold_, input.data.new(...).zero_(), slice writes into input.data), and the
file's own test harness shape: TemporalShift(nn.Sequential(), n_segment=8, n_div=8, inplace=True)
called on an (n*t, c, h, w) tensor, once plain and once on a leaf that requires grad.
Simplified: 8 channels of 6x6 instead of 3x224x224; the GPU half of the test is dropped.
"""
import torch
import torch.nn as nn


class TemporalShift(nn.Module):
    def __init__(self, net, n_segment=3, n_div=8, inplace=False):
        super(TemporalShift, self).__init__()
        self.net = net
        self.n_segment = n_segment
        self.fold_div = n_div
        self.inplace = inplace
        if inplace:
            print('=> Using in-place shift...')
        print('=> Using fold div: {}'.format(self.fold_div))

    def forward(self, x):
        x = self.shift(x, self.n_segment, fold_div=self.fold_div, inplace=self.inplace)
        return self.net(x)

    @staticmethod
    def shift(x, n_segment, fold_div=3, inplace=False):
        nt, c, h, w = x.size()
        n_batch = nt // n_segment
        x = x.view(n_batch, n_segment, c, h, w)

        fold = c // fold_div
        if inplace:
            out = InplaceShift.apply(x, fold)
        else:
            out = torch.zeros_like(x)
            out[:, :-1, :fold] = x[:, 1:, :fold]  # shift left
            out[:, 1:, fold: 2 * fold] = x[:, :-1, fold: 2 * fold]  # shift right
            out[:, :, 2 * fold:] = x[:, :, 2 * fold:]  # not shift

        return out.view(nt, c, h, w)


class InplaceShift(torch.autograd.Function):
    # Special thanks to @raoyongming for the help to this function
    @staticmethod
    def forward(ctx, input, fold):
        # not support higher order gradient
        # input = input.detach_()
        ctx.fold_ = fold
        n, t, c, h, w = input.size()
        buffer = input.data.new(n, t, fold, h, w).zero_()
        buffer[:, :-1] = input.data[:, 1:, :fold]
        input.data[:, :, :fold] = buffer
        buffer.zero_()
        buffer[:, 1:] = input.data[:, :-1, fold: 2 * fold]
        input.data[:, :, fold: 2 * fold] = buffer
        return input

    @staticmethod
    def backward(ctx, grad_output):
        # grad_output = grad_output.detach_()
        fold = ctx.fold_
        n, t, c, h, w = grad_output.size()
        buffer = grad_output.data.new(n, t, fold, h, w).zero_()
        buffer[:, 1:] = grad_output.data[:, :-1, :fold]
        grad_output.data[:, :, :fold] = buffer
        buffer.zero_()
        buffer[:, :-1] = grad_output.data[:, 1:, fold: 2 * fold]
        grad_output.data[:, :, fold: 2 * fold] = buffer
        return grad_output, None


tsm2 = torch.compile(TemporalShift(nn.Sequential(), n_segment=8, n_div=8, inplace=True))


def make():
    torch.manual_seed(0)
    tsm = TemporalShift(nn.Sequential(), n_segment=8, n_div=8, inplace=True)
    x = torch.rand(2 * 8, 8, 6, 6)
    x1 = torch.rand(2 * 8, 8, 6, 6)
    x1.requires_grad_()
    x2 = x1.clone()
    return tsm, [(x,), (x2,)]
