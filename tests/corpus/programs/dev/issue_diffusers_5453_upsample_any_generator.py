"""UNet upsample-size check written as `any(s % default_overall_up_factor != 0 for s in sample.shape[-2:])`
(the generator form the PR replaced; it only reads shapes, so torch 2.13 traces it).

Source: https://github.com/huggingface/diffusers/pull/5453 (src/diffusers/models/unet_2d_condition.py:846-852)
Kept: the `any(...)` generator over `sample.shape[-2:]`, `forward_upsample_size`/`upsample_size`, the
interpolate that uses it, and `pipe.unet = torch.compile(pipe.unet, mode="reduce-overhead", fullgraph=True)`.
Simplified: the UNet is a conv down/up pair; the logger call of the original block is not in this version.
"""
import torch
import torch.nn.functional as F
from torch import nn


class UNet2DConditionModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.num_upsamplers = 1
        self.down = nn.Conv2d(2, 2, 3, stride=2, padding=1)
        self.up = nn.Conv2d(2, 2, 3, padding=1)

    def forward(self, sample):
        default_overall_up_factor = 2**self.num_upsamplers
        forward_upsample_size = False
        upsample_size = None

        if any(s % default_overall_up_factor != 0 for s in sample.shape[-2:]):
            # Forward upsample size to force interpolation output size.
            forward_upsample_size = True

        if forward_upsample_size:
            upsample_size = sample.shape[-2:]
        h = self.down(sample)
        if upsample_size is not None:
            h = F.interpolate(h, size=upsample_size, mode="nearest")
        else:
            h = F.interpolate(h, scale_factor=2.0, mode="nearest")
        return self.up(h)


class Pipe:
    def __init__(self):
        self.unet = UNet2DConditionModel()


pipe = Pipe()
pipe.unet = torch.compile(pipe.unet, mode="reduce-overhead", fullgraph=True)


def make():
    torch.manual_seed(0)
    return UNet2DConditionModel(), [(torch.randn(1, 2, 8, 8),), (torch.randn(1, 2, 7, 8),)]
