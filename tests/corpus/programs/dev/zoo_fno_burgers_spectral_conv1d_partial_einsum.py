"""Fourier Neural Operator (1d Burgers): `SpectralConv1d` multiplies the low Fourier modes with a `functools.partial(torch.einsum, ...)` complex product on real/imag pairs and writes them into a zero spectrum by slice assignment.

Source: zongyi-li/fourier_neural_operator@4ed7737f6275716d6e29ab02f4652a6d0f4e3461:fourier_1d.py:27-145
Kept: compl_mul1d (the partial einsum over [..., 0]/[..., 1] pairs),
SpectralConv1d, SimpleBlock1d (including its use of the stale `x1` after
conv3) and the Net1d wrapper with `x.squeeze()` and count_params.
Simplified: the removed torch.rfft/torch.irfft(normalized=True, onesided=True)
calls are local stand-ins built on torch.fft.rfft/irfft(norm="ortho") with
view_as_real/view_as_complex (same (…, 2) layout); modes 4, width 8, fc1 16,
grid of 16 points; no data loading or tensorboard writer.
"""
import operator
from functools import partial, reduce

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def rfft_normalized_onesided(x):
    # torch.rfft(x, 1, normalized=True, onesided=True) of torch<=1.7
    return torch.view_as_real(torch.fft.rfft(x, norm="ortho"))


def irfft_normalized_onesided(x, signal_size):
    # torch.irfft(x, 1, normalized=True, onesided=True, signal_sizes=(n,))
    return torch.fft.irfft(torch.view_as_complex(x.contiguous()), n=signal_size, norm="ortho")


#Complex multiplication
def compl_mul1d(a, b):
    # (batch, in_channel, x ), (in_channel, out_channel, x) -> (batch, out_channel, x)
    op = partial(torch.einsum, "bix,iox->box")
    return torch.stack([
        op(a[..., 0], b[..., 0]) - op(a[..., 1], b[..., 1]),
        op(a[..., 1], b[..., 0]) + op(a[..., 0], b[..., 1])
    ], dim=-1)

################################################################
#  1d fourier layer
################################################################
class SpectralConv1d(nn.Module):
    def __init__(self, in_channels, out_channels, modes1):
        super(SpectralConv1d, self).__init__()

        """
        1D Fourier layer. It does FFT, linear transform, and Inverse FFT.
        """

        self.in_channels = in_channels
        self.out_channels = out_channels
        self.modes1 = modes1  #Number of Fourier modes to multiply, at most floor(N/2) + 1

        self.scale = (1 / (in_channels*out_channels))
        self.weights1 = nn.Parameter(self.scale * torch.rand(in_channels, out_channels, self.modes1, 2))

    def forward(self, x):
        batchsize = x.shape[0]
        #Compute Fourier coeffcients up to factor of e^(- something constant)
        x_ft = rfft_normalized_onesided(x)

        # Multiply relevant Fourier modes
        out_ft = torch.zeros(batchsize, self.in_channels, x.size(-1)//2 + 1, 2, device=x.device)
        out_ft[:, :, :self.modes1] = compl_mul1d(x_ft[:, :, :self.modes1], self.weights1)

        #Return to physical space
        x = irfft_normalized_onesided(out_ft, x.size(-1))
        return x

class SimpleBlock1d(nn.Module):
    def __init__(self, modes, width):
        super(SimpleBlock1d, self).__init__()

        self.modes1 = modes
        self.width = width
        self.fc0 = nn.Linear(2, self.width) # input channel is 2: (a(x), x)

        self.conv0 = SpectralConv1d(self.width, self.width, self.modes1)
        self.conv1 = SpectralConv1d(self.width, self.width, self.modes1)
        self.conv2 = SpectralConv1d(self.width, self.width, self.modes1)
        self.conv3 = SpectralConv1d(self.width, self.width, self.modes1)
        self.w0 = nn.Conv1d(self.width, self.width, 1)
        self.w1 = nn.Conv1d(self.width, self.width, 1)
        self.w2 = nn.Conv1d(self.width, self.width, 1)
        self.w3 = nn.Conv1d(self.width, self.width, 1)
        self.bn0 = torch.nn.BatchNorm1d(self.width)
        self.bn1 = torch.nn.BatchNorm1d(self.width)
        self.bn2 = torch.nn.BatchNorm1d(self.width)
        self.bn3 = torch.nn.BatchNorm1d(self.width)


        self.fc1 = nn.Linear(self.width, 16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):

        x = self.fc0(x)
        x = x.permute(0, 2, 1)

        x1 = self.conv0(x)
        x2 = self.w0(x)
        x = self.bn0(x1 + x2)
        x = F.relu(x)
        x1 = self.conv1(x)
        x2 = self.w1(x)
        x = self.bn1(x1 + x2)
        x = F.relu(x)
        x1 = self.conv2(x)
        x2 = self.w2(x)
        x = self.bn2(x1 + x2)
        x = F.relu(x)
        x = self.conv3(x)
        x2 = self.w3(x)
        x = self.bn3(x1 + x2)


        x = x.permute(0, 2, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        return x

class Net1d(nn.Module):
    def __init__(self, modes, width):
        super(Net1d, self).__init__()

        """
        A wrapper function
        """

        self.conv1 = SimpleBlock1d(modes, width)


    def forward(self, x):
        x = self.conv1(x)
        return x.squeeze()

    def count_params(self):
        c = 0
        for p in self.parameters():
            c += reduce(operator.mul, list(p.size()))

        return c


modes = 4
width = 8


def main():
    model = torch.compile(Net1d(modes, width).cpu())
    return model


def make():
    torch.manual_seed(0)
    s = 16
    grid = np.linspace(0, 2*np.pi, s).reshape(1, s, 1)
    grid = torch.tensor(grid, dtype=torch.float)
    a = torch.randn(3, s)
    x_batch = torch.cat([a.reshape(3, s, 1), grid.repeat(3, 1, 1)], dim=2)
    return Net1d(modes, width), [(x_batch,), (x_batch[:2],)]
