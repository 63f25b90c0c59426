"""nerf_pl ColorLoss: MSE on rgb_coarse, `+=` the fine term when 'rgb_fine' is in the dict.

Source: kwea123/nerf_pl@29fa73cd21cf7b00691d2bf41bbf08d4004a9584:losses.py:4-15
Also: kwea123/nerf_pl@2550ba0204995b89f1d4a70558564bd889a5ceec:metrics.py:4-8 (mse, psnr),
loss_dict lookup as train.py does (`loss_dict['color'](coef=1)`).
Kept: ColorLoss verbatim (nn.MSELoss member, key test on the results dict, in-place `+=`
on the loss tensor, coef scaling); psnr via -10*log10(mse) as training_step computes it
under torch.no_grad() on the 'fine' or 'coarse' output.
Simplified: the results dict comes in as an input (render_rays output shape), the
Lightning logging calls are dropped; the step is a small module so the loss is compiled.
"""
import torch
from torch import nn


def mse(image_pred, image_gt):
    return torch.mean((image_pred - image_gt) ** 2)


def psnr(image_pred, image_gt):
    return -10 * torch.log10(mse(image_pred, image_gt))


class ColorLoss(nn.Module):
    def __init__(self, coef=1):
        super().__init__()
        self.coef = coef
        self.loss = nn.MSELoss(reduction='mean')

    def forward(self, inputs, targets):
        loss = self.loss(inputs['rgb_coarse'], targets)
        if 'rgb_fine' in inputs:
            loss += self.loss(inputs['rgb_fine'], targets)

        return self.coef * loss


loss_dict = {'color': ColorLoss}


class LossAndPSNR(nn.Module):
    def __init__(self):
        super().__init__()
        self.loss = loss_dict['color'](coef=1)

    def forward(self, results, rgbs):
        loss = self.loss(results, rgbs)
        typ = 'fine' if 'rgb_fine' in results else 'coarse'

        with torch.no_grad():
            psnr_ = psnr(results[f'rgb_{typ}'], rgbs)

        return loss, psnr_


step = torch.compile(LossAndPSNR())


def make():
    torch.manual_seed(0)
    rgbs = torch.rand(64, 3)
    coarse = {'rgb_coarse': torch.rand(64, 3, requires_grad=True), 'depth_coarse': torch.rand(64)}
    both = dict(coarse)
    both['rgb_fine'] = torch.rand(64, 3, requires_grad=True)
    both['depth_fine'] = torch.rand(64)
    return LossAndPSNR(), [(coarse, rgbs), (both, rgbs)]
