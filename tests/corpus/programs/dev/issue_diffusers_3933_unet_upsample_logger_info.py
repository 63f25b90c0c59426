"""UNet2DConditionModel logs "Forward upsample size to force interpolation output size." when the
sample size is not a multiple of the overall upsampling factor.

Source: https://github.com/huggingface/diffusers/issues/3933 (diffusers 0.18 unet_2d_condition.py:720-731)
Kept: the `default_overall_up_factor` loop over `sample.shape[-2:]`, the `forward_upsample_size` flag, the
`logger.info` call, and `pipeline.unet = torch.compile(pipeline.unet)` as the entry.
Simplified: the UNet is a conv down/up pair; `upsample_size` is passed to the interpolate.
"""
import logging

import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)


class UNet2DConditionModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_upsamplers = 1
        self.down = nn.Conv2d(2, 2, 3, stride=2, padding=1)
        self.up = nn.Conv2d(2, 2, 3, padding=1)

    def forward(self, sample, timestep=None):
        # By default samples have to be AT least a multiple of the overall upsampling factor.
        # The overall upsampling factor is equal to 2 ** (# num of upsampling layers).
        # However, the upsampling interpolation output size can be forced to fit any upsampling size
        # on the fly if necessary.
        default_overall_up_factor = 2**self.num_upsamplers

        # upsample size should be forwarded when sample is not a multiple of `default_overall_up_factor`
        forward_upsample_size = False
        upsample_size = None

        for dim in sample.shape[-2:]:
            if dim % default_overall_up_factor != 0:
                # Forward upsample size to force interpolation output size.
                forward_upsample_size = True
                break

        if forward_upsample_size:
            logger.info("Forward upsample size to force interpolation output size.")
            upsample_size = sample.shape[-2:]

        h = self.down(sample)
        if upsample_size is not None:
            h = F.interpolate(h, size=upsample_size, mode="nearest")
        else:
            h = F.interpolate(h, scale_factor=2.0, mode="nearest")
        return self.up(h)


class Pipeline:
    def __init__(self):
        self.unet = UNet2DConditionModel()


pipeline = Pipeline()
pipeline.unet = torch.compile(pipeline.unet)


def make():
    torch.manual_seed(0)
    return UNet2DConditionModel(), [(torch.randn(1, 2, 8, 8),), (torch.randn(1, 2, 7, 8),)]
