"""Real-ESRGAN's on-the-fly degradation and training-pair pool: feed_data draws the resize with random.choices / np.random.uniform, then _dequeue_and_enqueue keeps a Python-int queue_ptr, initialises the pool on first use via hasattr, and shuffles it with randperm once full.

Source: xinntao/Real-ESRGAN@a4abfb2979a7bbff3f69f58f58ae324608821e27:realesrgan/models/realesrgan_model.py:14-184
Kept: _dequeue_and_enqueue verbatim (minus .cuda()), feed_data's structure: the
is_train / high_order_degradation switch, blur, the up/down/keep resize choice
with np.random.uniform scales and random.choice of the mode, the gaussian noise
branch, clamp and round, the pool call, the paired/validation else branch with
`'gt' in data`; the opt dict plumbing with opt.get defaults.
Simplified: BasicSR's filter2D is a local depthwise conv, USMSharp is identity,
DiffJPEG and the poisson noise / second degradation stage are dropped, no
random crop (inputs are already crop-sized); the model is a plain object as in
BasicSR; queue of 4, batches of 2, 8x8 gt, scale 2.
"""
import random

import numpy as np
import torch
from torch.nn import functional as F


def filter2D(img, kernel):
    """Depthwise blur with one kernel per batch element (stand-in for basicsr's filter2D)."""
    k = kernel.size(-1)
    b, c, h, w = img.size()
    img = F.pad(img, (k // 2, k // 2, k // 2, k // 2), mode='reflect')
    img = img.reshape(1, b * c, h + k - 1, w + k - 1)
    kernel = kernel.view(b, 1, k, k).repeat(1, c, 1, 1).view(b * c, 1, k, k)
    return F.conv2d(img, kernel, groups=b * c).view(b, c, h, w)


class RealESRGANModel:
    """RealESRGAN Model for Real-ESRGAN: Training Real-World Blind Super-Resolution with Pure Synthetic Data."""

    def __init__(self, opt):
        self.opt = opt
        self.is_train = opt['is_train']
        self.device = torch.device('cpu')
        self.usm_sharpener = lambda x: x
        self.queue_size = opt.get('queue_size', 180)

    @torch.no_grad()
    def _dequeue_and_enqueue(self):
        """It is the training pair pool for increasing the diversity in a batch.

        Batch processing limits the diversity of synthetic degradations in a batch. For example, samples in a
        batch could not have different resize scaling factors. Therefore, we employ this training pair pool
        to increase the degradation diversity in a batch.
        """
        # initialize
        b, c, h, w = self.lq.size()
        if not hasattr(self, 'queue_lr'):
            assert self.queue_size % b == 0, f'queue size {self.queue_size} should be divisible by batch size {b}'
            self.queue_lr = torch.zeros(self.queue_size, c, h, w)
            _, c, h, w = self.gt.size()
            self.queue_gt = torch.zeros(self.queue_size, c, h, w)
            self.queue_ptr = 0
        if self.queue_ptr == self.queue_size:  # the pool is full
            # do dequeue and enqueue
            # shuffle
            idx = torch.randperm(self.queue_size)
            self.queue_lr = self.queue_lr[idx]
            self.queue_gt = self.queue_gt[idx]
            # get first b samples
            lq_dequeue = self.queue_lr[0:b, :, :, :].clone()
            gt_dequeue = self.queue_gt[0:b, :, :, :].clone()
            # update the queue
            self.queue_lr[0:b, :, :, :] = self.lq.clone()
            self.queue_gt[0:b, :, :, :] = self.gt.clone()

            self.lq = lq_dequeue
            self.gt = gt_dequeue
        else:
            # only do enqueue
            self.queue_lr[self.queue_ptr:self.queue_ptr + b, :, :, :] = self.lq.clone()
            self.queue_gt[self.queue_ptr:self.queue_ptr + b, :, :, :] = self.gt.clone()
            self.queue_ptr = self.queue_ptr + b

    @torch.no_grad()
    def feed_data(self, data):
        """Accept data from dataloader, and then add two-order degradations to obtain LQ images.
        """
        if self.is_train and self.opt.get('high_order_degradation', True):
            # training data synthesis
            self.gt = data['gt'].to(self.device)
            self.gt_usm = self.usm_sharpener(self.gt)

            self.kernel1 = data['kernel1'].to(self.device)

            ori_h, ori_w = self.gt.size()[2:4]

            # ----------------------- The first degradation process ----------------------- #
            # blur
            out = filter2D(self.gt_usm, self.kernel1)
            # random resize
            updown_type = random.choices(['up', 'down', 'keep'], self.opt['resize_prob'])[0]
            if updown_type == 'up':
                scale = np.random.uniform(1, self.opt['resize_range'][1])
            elif updown_type == 'down':
                scale = np.random.uniform(self.opt['resize_range'][0], 1)
            else:
                scale = 1
            mode = random.choice(['area', 'bilinear', 'bicubic'])
            out = F.interpolate(out, scale_factor=scale, mode=mode)
            # add noise
            sigma = np.random.uniform(*self.opt['noise_range']) / 255.
            out = torch.clamp(out + torch.randn_like(out) * sigma, 0, 1)

            # resize back
            mode = random.choice(['area', 'bilinear', 'bicubic'])
            out = F.interpolate(out, size=(ori_h // self.opt['scale'], ori_w // self.opt['scale']), mode=mode)

            # clamp and round
            self.lq = torch.clamp((out * 255.0).round(), 0, 255) / 255.

            # training pair pool
            self._dequeue_and_enqueue()
            # sharpen self.gt again, as we have changed the self.gt with self._dequeue_and_enqueue
            self.gt_usm = self.usm_sharpener(self.gt)
            self.lq = self.lq.contiguous()  # for the warning: grad and param do not obey the gradient layout contract
        else:
            # for paired training or validation
            self.lq = data['lq'].to(self.device)
            if 'gt' in data:
                self.gt = data['gt'].to(self.device)
                self.gt_usm = self.usm_sharpener(self.gt)


OPT = {
    'is_train': True, 'queue_size': 4, 'scale': 2,
    'resize_prob': [0.2, 0.7, 0.1], 'resize_range': [0.5, 1.5], 'noise_range': [1, 30],
}


def train_feed():
    model = RealESRGANModel(OPT)
    return torch.compile(model.feed_data)


def make():
    torch.manual_seed(0)
    model = RealESRGANModel(dict(OPT))
    kernel = torch.full((2, 3, 3), 1.0 / 9)
    batches = [{'gt': torch.rand(2, 3, 8, 8), 'kernel1': kernel} for _ in range(3)]
    return model.feed_data, [(b,) for b in batches]
