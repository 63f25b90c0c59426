"""timm CoaT ConvRelPosEnc: `_assert(N == 1 + H * W, '')`, channel split by a Python list, per-window depthwise convs (no break).

Source: huggingface/pytorch-image-models@aa4b5850c1:timm/models/coat.py:30-96
Kept: the window dict -> conv_list / head_splits / channel_splits setup and
forward (the shape assert, class-token drop, transpose/reshape to an image,
torch.split by channel_splits, the conv loop, cat, the pad back of the class slot).
Simplified: windows {3: 1, 5: 1}, 2 heads of 2 channels, 2x2 tokens.
"""
from typing import Tuple

import torch
import torch.nn.functional as F
from torch import nn

_assert = torch._assert


class ConvRelPosEnc(nn.Module):
    def __init__(self, head_chs: int, num_heads: int, window: dict):
        super().__init__()
        self.conv_list = nn.ModuleList()
        self.head_splits = []
        for cur_window, cur_head_split in window.items():
            dilation = 1
            padding_size = (cur_window + (cur_window - 1) * (dilation - 1)) // 2
            cur_conv = nn.Conv2d(cur_head_split * head_chs, cur_head_split * head_chs, kernel_size=(cur_window, cur_window),
                                 padding=(padding_size, padding_size), dilation=(dilation, dilation), groups=cur_head_split * head_chs)
            self.conv_list.append(cur_conv)
            self.head_splits.append(cur_head_split)
        self.channel_splits = [x * head_chs for x in self.head_splits]

    def forward(self, q, v, size: Tuple[int, int]):
        B, num_heads, N, C = q.shape
        H, W = size
        _assert(N == 1 + H * W, '')
        q_img = q[:, :, 1:, :]
        v_img = v[:, :, 1:, :]
        v_img = v_img.transpose(-1, -2).reshape(B, num_heads * C, H, W)
        v_img_list = torch.split(v_img, self.channel_splits, dim=1)
        conv_v_img_list = []
        for i, conv in enumerate(self.conv_list):
            conv_v_img_list.append(conv(v_img_list[i]))
        conv_v_img = torch.cat(conv_v_img_list, dim=1)
        conv_v_img = conv_v_img.reshape(B, num_heads, C, H * W).transpose(-1, -2)
        EV_hat = q_img * conv_v_img
        EV_hat = F.pad(EV_hat, (0, 0, 1, 0, 0, 0))
        return EV_hat


crpe = torch.compile(ConvRelPosEnc(head_chs=2, num_heads=2, window={3: 1, 5: 1}))


def make():
    torch.manual_seed(0)
    return ConvRelPosEnc(head_chs=2, num_heads=2, window={3: 1, 5: 1}), [(torch.randn(1, 2, 5, 2), torch.randn(1, 2, 5, 2), (2, 2))]
