"""diffusers Upsample2D: channel assert, batch-size contiguous guard, scale factor from output_size, numel overflow guard (no break).

Source: huggingface/diffusers@58eb52c080:src/diffusers/models/upsampling.py:140-190
Kept: the deprecated-scale check (never taken here), the channels assert,
norm permute, conv_transpose early return, `shape[0] >= 64` contiguous, the
interpolate branch with the max over output_size ratios and `numel() *
scale_factor > 2**31`, the name == "conv" switch.
Simplified: bfloat16/torch-version casts dropped; 4 channels.
"""
import torch
import torch.nn.functional as F
from torch import nn


class Upsample2D(nn.Module):
    def __init__(self, channels=4, use_conv=True, use_conv_transpose=False, out_channels=None, name="conv", interpolate=True):
        super().__init__()
        self.channels = channels
        self.out_channels = out_channels or channels
        self.use_conv = use_conv
        self.use_conv_transpose = use_conv_transpose
        self.name = name
        self.interpolate = interpolate
        self.norm = None
        self.conv = nn.Conv2d(self.channels, self.out_channels, kernel_size=3, padding=1)

    def forward(self, hidden_states, output_size=None, *args, **kwargs):
        if len(args) > 0 or kwargs.get("scale", None) is not None:
            raise TypeError("scale is deprecated")
        assert hidden_states.shape[1] == self.channels
        if self.norm is not None:
            hidden_states = self.norm(hidden_states.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        if self.use_conv_transpose:
            return self.conv(hidden_states)
        if hidden_states.shape[0] >= 64:
            hidden_states = hidden_states.contiguous()
        if self.interpolate:
            scale_factor = 2 if output_size is None else max([f / s for f, s in zip(output_size, hidden_states.shape[-2:])])
            if hidden_states.numel() * scale_factor > pow(2, 31):
                hidden_states = hidden_states.contiguous()
            if output_size is None:
                hidden_states = F.interpolate(hidden_states, scale_factor=2.0, mode="nearest")
            else:
                hidden_states = F.interpolate(hidden_states, size=output_size, mode="nearest")
        if self.use_conv:
            if self.name == "conv":
                hidden_states = self.conv(hidden_states)
            else:
                hidden_states = self.Conv2d_0(hidden_states)
        return hidden_states


upsampler = Upsample2D()
upsampler = torch.compile(upsampler, backend="inductor", dynamic=False)


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 4, 3, 3)
    return Upsample2D(), [(x,), (x, (7, 6))]
