"""diffusers ResnetBlock2D: a deprecated `scale` kwarg triggers deprecate() -> warnings.warn(FutureWarning) in forward.

Source: huggingface/diffusers@58eb52c080:src/diffusers/models/resnet.py:319-377; src/diffusers/utils/deprecation_utils.py:71-112
Kept: the `len(args) > 0 or kwargs.get("scale")` check, deprecate (the
tuple normalisation, take_from None warning, FutureWarning with stacklevel),
the block body: norm/act, time embedding projection with skip_time_act,
time_embedding_norm "default"/"scale_shift", dropout, conv shortcut with the
training-only contiguous, output_scale_factor.
Simplified: deprecate skips the version comparison; 8 channels, groups 4.
"""
import warnings

import torch
from torch import nn


def deprecate(*args, take_from=None, standard_warn=True, stacklevel=2):
    deprecated_kwargs = take_from
    values = ()
    if not isinstance(args[0], tuple):
        args = (args,)
    for attribute, version_name, message in args:
        warning = None
        if isinstance(deprecated_kwargs, dict) and attribute in deprecated_kwargs:
            values += (deprecated_kwargs.pop(attribute),)
            warning = f"The `{attribute}` argument is deprecated and will be removed in version {version_name}."
        elif deprecated_kwargs is None:
            warning = f"`{attribute}` is deprecated and will be removed in version {version_name}."
        if warning is not None:
            warning = warning + " " if standard_warn else ""
            warnings.warn(warning + message, FutureWarning, stacklevel=stacklevel)
    if len(values) == 0:
        return
    elif len(values) == 1:
        return values[0]
    return values


class ResnetBlock2D(nn.Module):
    def __init__(self, in_channels=8, out_channels=8, temb_channels=8, time_embedding_norm="default"):
        super().__init__()
        self.norm1 = nn.GroupNorm(4, in_channels)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb_channels, out_channels)
        self.norm2 = nn.GroupNorm(4, out_channels)
        self.dropout = nn.Dropout(0.0)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.nonlinearity = nn.SiLU()
        self.upsample = self.downsample = None
        self.skip_time_act = False
        self.time_embedding_norm = time_embedding_norm
        self.conv_shortcut = None
        self.output_scale_factor = 1.0

    def forward(self, input_tensor, temb, *args, **kwargs):
        if len(args) > 0 or kwargs.get("scale", None) is not None:
            deprecation_message = "The `scale` argument is deprecated and will be ignored. Please remove it, as passing it will raise an error in the future."
            deprecate("scale", "1.0.0", deprecation_message)
        hidden_states = input_tensor
        hidden_states = self.norm1(hidden_states)
        hidden_states = self.nonlinearity(hidden_states)
        hidden_states = self.conv1(hidden_states)
        if self.time_emb_proj is not None:
            if not self.skip_time_act:
                temb = self.nonlinearity(temb)
            temb = self.time_emb_proj(temb)[:, :, None, None]
        if self.time_embedding_norm == "default":
            if temb is not None:
                hidden_states = hidden_states + temb
            hidden_states = self.norm2(hidden_states)
        elif self.time_embedding_norm == "scale_shift":
            if temb is None:
                raise ValueError(f" `temb` should not be None when `time_embedding_norm` is {self.time_embedding_norm}")
            time_scale, time_shift = torch.chunk(temb, 2, dim=1)
            hidden_states = self.norm2(hidden_states)
            hidden_states = hidden_states * (1 + time_scale) + time_shift
        else:
            hidden_states = self.norm2(hidden_states)
        hidden_states = self.nonlinearity(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.conv2(hidden_states)
        if self.conv_shortcut is not None:
            if self.training:
                input_tensor = input_tensor.contiguous()
            input_tensor = self.conv_shortcut(input_tensor)
        return (input_tensor + hidden_states) / self.output_scale_factor


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.resnet = ResnetBlock2D()

    def forward(self, x, temb, lora_scale=None):
        if lora_scale is None:
            return self.resnet(x, temb)
        return self.resnet(x, temb, scale=lora_scale)


block = torch.compile(Block())


def make():
    torch.manual_seed(0)
    x, temb = torch.randn(1, 8, 4, 4), torch.randn(1, 8)
    return Block(), [(x, temb), (x, temb, 0.5)]
