"""MODNet supervised_training_iter: train(), zero_grad, trimap boundaries, blurer, backward + step.

Source: ZHKKKe/MODNet@27db49f9ded28d31fe69d4f36d858e14ac479cef:src/trainer.py:19-161
Kept: GaussianBlurLayer (4D / channel checks with print + exit, ReflectionPad + grouped
conv, _init_kernel copying a numpy kernel into the parameters), the module-level
`blurer` and `global blurer`, supervised_training_iter verbatim (modnet.train(),
optimizer.zero_grad(), modnet(image, False), boundary mask from the trimap,
F.interpolate(scale_factor=1/16), torch.where losses, loss.backward(), optimizer.step()).
Simplified: scipy.ndimage.gaussian_filter on a unit impulse is approximated with numpy
(normalised separable Gaussian, reflected at the borders; no scipy import); MODNet is a small stand-in returning
(pred_semantic at 1/16, pred_detail, pred_matte) for the (image, inference) call;
SGD(lr=0.01, momentum=0.9) as in the docstring example.
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def _gaussian_filter_impulse(n, sigma):
    # approximates scipy.ndimage.gaussian_filter(n, sigma) for the centred unit impulse n
    size = n.shape[0]
    radius = int(4.0 * sigma + 0.5)
    xs = np.arange(-radius, radius + 1)
    w = np.exp(-0.5 * (xs / sigma) ** 2)
    w = w / w.sum()
    k1 = np.zeros(size)
    c = size // 2
    for i, x in enumerate(xs):
        j = c + x
        # reflect mode at the borders, as scipy does
        while j < 0 or j >= size:
            j = -j - 1 if j < 0 else 2 * size - j - 1
        k1[j] += w[i]
    return np.outer(k1, k1)


class GaussianBlurLayer(nn.Module):
    """ Add Gaussian Blur to a 4D tensors
    This layer takes a 4D tensor of {N, C, H, W} as input.
    The Gaussian blur will be performed in given channel number (C) splitly.
    """

    def __init__(self, channels, kernel_size):
        super(GaussianBlurLayer, self).__init__()
        self.channels = channels
        self.kernel_size = kernel_size
        assert self.kernel_size % 2 != 0

        self.op = nn.Sequential(
            nn.ReflectionPad2d(math.floor(self.kernel_size / 2)),
            nn.Conv2d(channels, channels, self.kernel_size,
                      stride=1, padding=0, bias=None, groups=channels)
        )

        self._init_kernel()

    def forward(self, x):
        if not len(list(x.shape)) == 4:
            print('\'GaussianBlurLayer\' requires a 4D tensor as input\n')
            exit()
        elif not x.shape[1] == self.channels:
            print('In \'GaussianBlurLayer\', the required channel ({0}) is'
                  'not the same as input ({1})\n'.format(self.channels, x.shape[1]))
            exit()

        return self.op(x)

    def _init_kernel(self):
        sigma = 0.3 * ((self.kernel_size - 1) * 0.5 - 1) + 0.8

        n = np.zeros((self.kernel_size, self.kernel_size))
        i = math.floor(self.kernel_size / 2)
        n[i, i] = 1
        kernel = _gaussian_filter_impulse(n, sigma)

        for name, param in self.named_parameters():
            param.data.copy_(torch.from_numpy(kernel))


blurer = GaussianBlurLayer(1, 3)  # .cuda
if torch.cuda.is_available():
    blurer.cuda()


class TinyMODNet(nn.Module):
    """Stand-in for MODNet: semantic (1/16), detail and fused matte branches."""

    def __init__(self):
        super().__init__()
        self.lr_branch = nn.Sequential(nn.Conv2d(3, 8, 3, 4, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, 4, 1),
                                       nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 1, 1))
        self.hr_branch = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 1, 1))
        self.f_branch = nn.Conv2d(2, 1, 3, 1, 1)

    def forward(self, img, inference):
        pred_semantic = torch.sigmoid(self.lr_branch(img))
        pred_detail = torch.sigmoid(self.hr_branch(img))
        up = F.interpolate(pred_semantic, scale_factor=16, mode='bilinear', align_corners=False)
        pred_matte = torch.sigmoid(self.f_branch(torch.cat([up, pred_detail], dim=1)))
        return pred_semantic, pred_detail, pred_matte


def supervised_training_iter(
        modnet, optimizer, image, trimap, gt_matte,
        semantic_scale=10.0, detail_scale=10.0, matte_scale=1.0):
    global blurer

    # set the model to train mode and clear the optimizer
    modnet.train()
    optimizer.zero_grad()

    # forward the model
    pred_semantic, pred_detail, pred_matte = modnet(image, False)

    # calculate the boundary mask from the trimap
    boundaries = (trimap < 0.5) + (trimap > 0.5)

    # calculate the semantic loss
    gt_semantic = F.interpolate(gt_matte, scale_factor=1 / 16, mode='bilinear')
    gt_semantic = blurer(gt_semantic)
    semantic_loss = torch.mean(F.mse_loss(pred_semantic, gt_semantic))
    semantic_loss = semantic_scale * semantic_loss

    # calculate the detail loss
    pred_boundary_detail = torch.where(boundaries, trimap, pred_detail)
    gt_detail = torch.where(boundaries, trimap, gt_matte)
    detail_loss = torch.mean(F.l1_loss(pred_boundary_detail, gt_detail))
    detail_loss = detail_scale * detail_loss

    # calculate the matte loss
    pred_boundary_matte = torch.where(boundaries, trimap, pred_matte)
    matte_l1_loss = F.l1_loss(pred_matte, gt_matte) + 4.0 * F.l1_loss(pred_boundary_matte, gt_matte)
    matte_compositional_loss = F.l1_loss(image * pred_matte, image * gt_matte) \
        + 4.0 * F.l1_loss(image * pred_boundary_matte, image * gt_matte)
    matte_loss = torch.mean(matte_l1_loss + matte_compositional_loss)
    matte_loss = matte_scale * matte_loss

    # calculate the final loss, backward the loss, and update the model
    loss = semantic_loss + detail_loss + matte_loss
    loss.backward()
    optimizer.step()

    # for test
    return semantic_loss, detail_loss, matte_loss


train_iter = torch.compile(supervised_training_iter)


def make():
    torch.manual_seed(0)
    modnet = TinyMODNet()
    optimizer = torch.optim.SGD(modnet.parameters(), lr=0.01, momentum=0.9)
    image = torch.randn(2, 3, 64, 64)
    gt_matte = torch.rand(2, 1, 64, 64)
    trimap = torch.full((2, 1, 64, 64), 0.5)
    trimap[gt_matte > 0.8] = 1.0
    trimap[gt_matte < 0.2] = 0.0
    return supervised_training_iter, [(modnet, optimizer, image, trimap, gt_matte)]
