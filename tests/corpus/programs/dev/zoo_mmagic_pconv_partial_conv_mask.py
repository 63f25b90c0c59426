"""mmagic partial-convolution inpainting encoder: each PartialConv2d re-derives a mask ratio under `torch.no_grad()` from a fixed all-ones kernel whose element count was turned into a Python number in __init__ (`np.prod(...).item()`), and the encoder threads features and masks through `getattr(self, f'enc{i}')` into two dicts (no break expected).

Source: open-mmlab/mmagic@0a560bba9b79ebe78574e1d4cbbdd0e798e63568:mmagic/models/editors/pconv/partial_conv.py:10-103; mmagic/models/editors/pconv/mask_conv_module.py:6-88; mmagic/models/editors/pconv/pconv_encoder.py:10-132
Kept: PartialConv2d, MaskConvModule.forward and PConvEncoder (constructor, norm_eval train()
override, forward) verbatim (docstrings dropped).
Simplified: mmcv's ConvModule base is a small module with the same attributes
(order, with_norm, with_activation, with_explicit_padding, conv/norm/activate) building
PConv from conv_cfg; registries and BaseModule are dropped; 4 layers on 32x32 inputs.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm


class PartialConv2d(nn.Conv2d):
    def __init__(self, *args, multi_channel=False, eps=1e-8, **kwargs):
        super().__init__(*args, **kwargs)

        # whether the mask is multi-channel or not
        self.multi_channel = multi_channel
        self.eps = eps

        if self.multi_channel:
            out_channels, in_channels = self.out_channels, self.in_channels
        else:
            out_channels, in_channels = 1, 1

        self.register_buffer(
            'weight_mask_updater',
            torch.ones(out_channels, in_channels, self.kernel_size[0],
                       self.kernel_size[1]))

        self.mask_kernel_numel = np.prod(self.weight_mask_updater.shape[1:4])
        self.mask_kernel_numel = (self.mask_kernel_numel).item()

    def forward(self, input, mask=None, return_mask=True):
        assert input.dim() == 4
        if mask is not None:
            assert mask.dim() == 4
            if self.multi_channel:
                assert mask.shape[1] == input.shape[1]
            else:
                assert mask.shape[1] == 1

        # update mask and compute mask ratio
        if mask is not None:
            with torch.no_grad():

                updated_mask = F.conv2d(
                    mask,
                    self.weight_mask_updater,
                    bias=None,
                    stride=self.stride,
                    padding=self.padding,
                    dilation=self.dilation)
                mask_ratio = self.mask_kernel_numel / (updated_mask + self.eps)

                updated_mask = torch.clamp(updated_mask, 0, 1)
                mask_ratio = mask_ratio * updated_mask

        # standard conv2d
        if mask is not None:
            input = input * mask
        raw_out = super().forward(input)

        if mask is not None:
            if self.bias is None:
                output = raw_out * mask_ratio
            else:
                # compute new bias when mask is given
                bias_view = self.bias.view(1, self.out_channels, 1, 1)
                output = (raw_out - bias_view) * mask_ratio + bias_view
                output = output * updated_mask
        else:
            output = raw_out

        if return_mask and mask is not None:
            return output, updated_mask

        return output


class ConvModule(nn.Module):
    """The parts of mmcv's ConvModule that MaskConvModule uses."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 conv_cfg=None, norm_cfg=None, act_cfg=dict(type='ReLU'),
                 order=('conv', 'norm', 'act')):
        super().__init__()
        self.conv_cfg = conv_cfg
        self.order = order
        self.with_norm = norm_cfg is not None
        self.with_activation = act_cfg is not None
        self.with_explicit_padding = False
        conv_kwargs = {k: v for k, v in conv_cfg.items() if k != 'type'}
        self.conv = PartialConv2d(in_channels, out_channels, kernel_size, stride=stride,
                                  padding=padding, bias=not self.with_norm, **conv_kwargs)
        if self.with_norm:
            self.norm = nn.BatchNorm2d(out_channels)
        if self.with_activation:
            self.activate = nn.ReLU(inplace=True)

    def init_weights(self):
        nn.init.kaiming_normal_(self.conv.weight, a=0, mode='fan_out', nonlinearity='relu')
        if self.conv.bias is not None:
            nn.init.constant_(self.conv.bias, 0)
        if self.with_norm:
            nn.init.constant_(self.norm.weight, 1)
            nn.init.constant_(self.norm.bias, 0)


class MaskConvModule(ConvModule):
    supported_conv_list = ['PConv']

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        assert self.conv_cfg['type'] in self.supported_conv_list

        self.init_weights()

    def forward(self,
                x,
                mask=None,
                activate=True,
                norm=True,
                return_mask=True):
        for layer in self.order:
            if layer == 'conv':
                if self.with_explicit_padding:
                    x = self.padding_layer(x)
                    mask = self.padding_layer(mask)
                if return_mask:
                    x, updated_mask = self.conv(
                        x, mask, return_mask=return_mask)
                else:
                    x = self.conv(x, mask, return_mask=False)
            elif layer == 'norm' and norm and self.with_norm:
                x = self.norm(x)
            elif layer == 'act' and activate and self.with_activation:
                x = self.activate(x)

        if return_mask:
            return x, updated_mask

        return x


class PConvEncoder(nn.Module):
    def __init__(self,
                 in_channels=3,
                 num_layers=7,
                 conv_cfg=dict(type='PConv', multi_channel=True),
                 norm_cfg=dict(type='BN', requires_grad=True),
                 norm_eval=False):
        super().__init__()
        self.num_layers = num_layers
        self.norm_eval = norm_eval

        self.enc1 = MaskConvModule(
            in_channels,
            64,
            kernel_size=7,
            stride=2,
            padding=3,
            conv_cfg=conv_cfg,
            norm_cfg=None,
            act_cfg=dict(type='ReLU'))

        self.enc2 = MaskConvModule(
            64,
            128,
            kernel_size=5,
            stride=2,
            padding=2,
            conv_cfg=conv_cfg,
            norm_cfg=norm_cfg,
            act_cfg=dict(type='ReLU'))

        self.enc3 = MaskConvModule(
            128,
            256,
            kernel_size=5,
            stride=2,
            padding=2,
            conv_cfg=conv_cfg,
            norm_cfg=norm_cfg,
            act_cfg=dict(type='ReLU'))

        self.enc4 = MaskConvModule(
            256,
            512,
            kernel_size=3,
            stride=2,
            padding=1,
            conv_cfg=conv_cfg,
            norm_cfg=norm_cfg,
            act_cfg=dict(type='ReLU'))

        for i in range(4, num_layers):
            name = f'enc{i+1}'
            self.add_module(
                name,
                MaskConvModule(
                    512,
                    512,
                    kernel_size=3,
                    stride=2,
                    padding=1,
                    conv_cfg=conv_cfg,
                    norm_cfg=norm_cfg,
                    act_cfg=dict(type='ReLU')))

    def train(self, mode=True):
        super().train(mode)
        if mode and self.norm_eval:
            for m in self.modules():
                # trick: eval have effect on BatchNorm only
                if isinstance(m, _BatchNorm):
                    m.eval()

    def forward(self, x, mask):
        # dict for hidden layers of main information flow
        hidden_feats = {}
        # dict for hidden layers of mask information flow
        hidden_masks = {}
        hidden_feats['h0'], hidden_masks['h0'] = x, mask
        h_key_prev = 'h0'

        for i in range(1, self.num_layers + 1):
            l_key = f'enc{i}'
            h_key = f'h{i}'
            hidden_feats[h_key], hidden_masks[h_key] = getattr(self, l_key)(
                hidden_feats[h_key_prev], hidden_masks[h_key_prev])
            h_key_prev = h_key

        outputs = dict(
            out=hidden_feats[f'h{self.num_layers}'],
            hidden_feats=hidden_feats,
            hidden_masks=hidden_masks)

        return outputs


def build_encoder():
    return PConvEncoder(in_channels=3, num_layers=5, norm_eval=True)


def build_compiled():
    encoder = build_encoder()
    encoder.eval()  # PConvEncoder.train() returns None, so .eval() cannot be chained
    return torch.compile(encoder)


def make():
    torch.manual_seed(0)
    img = torch.randn(1, 3, 32, 32)
    mask = torch.ones(1, 3, 32, 32)
    mask[:, :, 8:20, 10:24] = 0.0
    encoder = build_encoder()
    encoder.eval()
    return encoder, [(img * mask, mask), (img[:, :, :16], mask[:, :, :16])]
