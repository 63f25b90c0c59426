"""WaveGlow Invertible1x1Conv: the forward pass returns `torch.slogdet(W)[1]` scaled by the sizes; reverse caches `self.W_inverse` on first use (`hasattr` check) and compares `z.type()` with 'torch.cuda.HalfTensor'.

Source: NVIDIA/waveglow@8afb643df59265016af6bd255c7516309d675168:glow.py:62-102
Kept: __init__ (QR init, det sign fix) and forward verbatim, both directions.
Simplified: `Variable(W_inverse[..., None])` is `W_inverse[..., None]`
(Variable is an identity today); 4 channels.
"""
import torch
import torch.nn.functional as F


class Invertible1x1Conv(torch.nn.Module):
    """
    The layer outputs both the convolution, and the log determinant
    of its weight matrix.  If reverse=True it does convolution with
    inverse
    """
    def __init__(self, c):
        super(Invertible1x1Conv, self).__init__()
        self.conv = torch.nn.Conv1d(c, c, kernel_size=1, stride=1, padding=0,
                                    bias=False)

        # Sample a random orthonormal matrix to initialize weights
        W = torch.qr(torch.FloatTensor(c, c).normal_())[0]

        # Ensure determinant is 1.0 not -1.0
        if torch.det(W) < 0:
            W[:,0] = -1*W[:,0]
        W = W.view(c, c, 1)
        self.conv.weight.data = W

    def forward(self, z, reverse=False):
        # shape
        batch_size, group_size, n_of_groups = z.size()

        W = self.conv.weight.squeeze()

        if reverse:
            if not hasattr(self, 'W_inverse'):
                # Reverse computation
                W_inverse = W.float().inverse()
                W_inverse = W_inverse[..., None]
                if z.type() == 'torch.cuda.HalfTensor':
                    W_inverse = W_inverse.half()
                self.W_inverse = W_inverse
            z = F.conv1d(z, self.W_inverse, bias=None, stride=1, padding=0)
            return z
        else:
            # Forward computation
            log_det_W = batch_size * n_of_groups * torch.logdet(W)
            z = self.conv(z)
            return z, log_det_W


conv = torch.compile(Invertible1x1Conv(4), backend="inductor")


def make():
    torch.manual_seed(0)
    m = Invertible1x1Conv(4)
    z = torch.randn(2, 4, 5)
    return m, [(z,), (z, True)]
