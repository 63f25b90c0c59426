"""MPRNet edge loss: `EdgeLoss` builds a 5x5 Gaussian kernel in `__init__` (moved to CUDA only `if torch.cuda.is_available()`), and in forward filters, downsamples, writes `down*4` into a strided slice of `torch.zeros_like`, filters again, and compares the two Laplacian images with a Charbonnier loss.

Source: swz30/MPRNet@9edfb1d84fcacd1b49f0c2a412f874a70b678deb:Denoising/losses.py:1-41
Also: Deblurring/train.py@a5b16590b34842c1e9913d07e5156996a900c93a (criterion_char / criterion_edge
built once and applied to each of the three stage outputs: `loss = loss_char + 0.05*loss_edge`).
Kept: CharbonnierLoss and EdgeLoss verbatim.
Simplified: the training loop is reduced to compiling the EdgeLoss module; one restored
image and its target, 2x3x32x32.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

class CharbonnierLoss(nn.Module):
    """Charbonnier Loss (L1)"""

    def __init__(self, eps=1e-3):
        super(CharbonnierLoss, self).__init__()
        self.eps = eps

    def forward(self, x, y):
        diff = x - y
        # loss = torch.sum(torch.sqrt(diff * diff + self.eps))
        loss = torch.mean(torch.sqrt((diff * diff) + (self.eps*self.eps)))
        return loss

class EdgeLoss(nn.Module):
    def __init__(self):
        super(EdgeLoss, self).__init__()
        k = torch.Tensor([[.05, .25, .4, .25, .05]])
        self.kernel = torch.matmul(k.t(),k).unsqueeze(0).repeat(3,1,1,1)
        if torch.cuda.is_available():
            self.kernel = self.kernel.cuda()
        self.loss = CharbonnierLoss()

    def conv_gauss(self, img):
        n_channels, _, kw, kh = self.kernel.shape
        img = F.pad(img, (kw//2, kh//2, kw//2, kh//2), mode='replicate')
        return F.conv2d(img, self.kernel, groups=n_channels)

    def laplacian_kernel(self, current):
        filtered    = self.conv_gauss(current)    # filter
        down        = filtered[:,:,::2,::2]               # downsample
        new_filter  = torch.zeros_like(filtered)
        new_filter[:,:,::2,::2] = down*4                  # upsample
        filtered    = self.conv_gauss(new_filter) # filter
        diff = current - filtered
        return diff

    def forward(self, x, y):
        loss = self.loss(self.laplacian_kernel(x), self.laplacian_kernel(y))
        return loss


criterion_char = CharbonnierLoss()
criterion_edge = torch.compile(EdgeLoss())


def make():
    torch.manual_seed(0)
    restored = torch.rand(2, 3, 32, 32)
    target = torch.rand(2, 3, 32, 32)
    return EdgeLoss(), [(restored, target)]
