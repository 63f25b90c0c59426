"""diffusers UpBlock2D with FreeU enabled: apply_freeu's in-place channel scaling and fourier_filter's FFT mask.

Source: huggingface/diffusers@58eb52c080:src/diffusers/models/unets/unet_2d_blocks.py:2474-2580; src/diffusers/utils/torch_utils.py:249-305
Kept: UpBlock2D.forward (the scale deprecation check, the getattr chain for
is_freeu_enabled, popping res_hidden_states from the tuple, apply_freeu,
cat, the gradient-checkpointing switch, upsamplers with upsample_size),
apply_freeu's resolution_idx switch with slice assignment, fourier_filter's
power-of-two check (bit tricks on H and W), fftn/fftshift, the centre mask
slice assignment, ifftshift/ifftn().real; enable_freeu setting s1/s2/b1/b2.
Simplified: ResnetBlock2D is GroupNorm-SiLU-conv with a temb projection and a
1x1 shortcut; Upsample2D is nearest interpolate + conv; deprecate is dropped
(no scale is passed).
"""
import torch
import torch.nn.functional as F
from torch import nn
from torch.fft import fftn, fftshift, ifftn, ifftshift


def fourier_filter(x_in, threshold, scale):
    x = x_in
    B, C, H, W = x.shape

    if (W & (W - 1)) != 0 or (H & (H - 1)) != 0:
        x = x.to(dtype=torch.float32)
    elif x.dtype != torch.float32:
        x = x.to(dtype=torch.float32)

    x_freq = fftn(x, dim=(-2, -1))
    x_freq = fftshift(x_freq, dim=(-2, -1))

    B, C, H, W = x_freq.shape
    mask = torch.ones((B, C, H, W), device=x.device)

    crow, ccol = H // 2, W // 2
    mask[..., crow - threshold : crow + threshold, ccol - threshold : ccol + threshold] = scale
    x_freq = x_freq * mask

    x_freq = ifftshift(x_freq, dim=(-2, -1))
    x_filtered = ifftn(x_freq, dim=(-2, -1)).real

    return x_filtered.to(dtype=x_in.dtype)


def apply_freeu(resolution_idx, hidden_states, res_hidden_states, **freeu_kwargs):
    if resolution_idx == 0:
        num_half_channels = hidden_states.shape[1] // 2
        hidden_states[:, :num_half_channels] = hidden_states[:, :num_half_channels] * freeu_kwargs["b1"]
        res_hidden_states = fourier_filter(res_hidden_states, threshold=1, scale=freeu_kwargs["s1"])
    if resolution_idx == 1:
        num_half_channels = hidden_states.shape[1] // 2
        hidden_states[:, :num_half_channels] = hidden_states[:, :num_half_channels] * freeu_kwargs["b2"]
        res_hidden_states = fourier_filter(res_hidden_states, threshold=1, scale=freeu_kwargs["s2"])

    return hidden_states, res_hidden_states


class ResnetBlock2D(nn.Module):
    def __init__(self, in_channels, out_channels, temb_channels, groups=2):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, in_channels)
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb_channels, out_channels)
        self.norm2 = nn.GroupNorm(groups, out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1)
        self.nonlinearity = nn.SiLU()
        self.conv_shortcut = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, input_tensor, temb):
        hidden_states = self.conv1(self.nonlinearity(self.norm1(input_tensor)))
        if temb is not None:
            temb = self.time_emb_proj(self.nonlinearity(temb))[:, :, None, None]
            hidden_states = hidden_states + temb
        hidden_states = self.conv2(self.nonlinearity(self.norm2(hidden_states)))
        return self.conv_shortcut(input_tensor) + hidden_states


class Upsample2D(nn.Module):
    def __init__(self, channels, use_conv=True, out_channels=None):
        super().__init__()
        self.conv = nn.Conv2d(channels, out_channels or channels, 3, padding=1) if use_conv else None

    def forward(self, hidden_states, output_size=None):
        if output_size is None:
            hidden_states = F.interpolate(hidden_states, scale_factor=2.0, mode="nearest")
        else:
            hidden_states = F.interpolate(hidden_states, size=output_size, mode="nearest")
        if self.conv is not None:
            hidden_states = self.conv(hidden_states)
        return hidden_states


class UpBlock2D(nn.Module):
    def __init__(self, in_channels, prev_output_channel, out_channels, temb_channels, resolution_idx=None,
                 num_layers=2, add_upsample=True):
        super().__init__()
        resnets = []
        for i in range(num_layers):
            res_skip_channels = in_channels if (i == num_layers - 1) else out_channels
            resnet_in_channels = prev_output_channel if i == 0 else out_channels
            resnets.append(ResnetBlock2D(resnet_in_channels + res_skip_channels, out_channels, temb_channels))
        self.resnets = nn.ModuleList(resnets)
        if add_upsample:
            self.upsamplers = nn.ModuleList([Upsample2D(out_channels, use_conv=True, out_channels=out_channels)])
        else:
            self.upsamplers = None
        self.gradient_checkpointing = False
        self.resolution_idx = resolution_idx

    def enable_freeu(self, s1, s2, b1, b2):
        setattr(self, "s1", s1)
        setattr(self, "s2", s2)
        setattr(self, "b1", b1)
        setattr(self, "b2", b2)

    def forward(self, hidden_states, res_hidden_states_tuple, temb=None, upsample_size=None, *args, **kwargs):
        is_freeu_enabled = (
            getattr(self, "s1", None)
            and getattr(self, "s2", None)
            and getattr(self, "b1", None)
            and getattr(self, "b2", None)
        )

        for resnet in self.resnets:
            res_hidden_states = res_hidden_states_tuple[-1]
            res_hidden_states_tuple = res_hidden_states_tuple[:-1]

            if is_freeu_enabled:
                hidden_states, res_hidden_states = apply_freeu(
                    self.resolution_idx,
                    hidden_states,
                    res_hidden_states,
                    s1=self.s1,
                    s2=self.s2,
                    b1=self.b1,
                    b2=self.b2,
                )

            hidden_states = torch.cat([hidden_states, res_hidden_states], dim=1)

            if torch.is_grad_enabled() and self.gradient_checkpointing:
                hidden_states = torch.utils.checkpoint.checkpoint(resnet, hidden_states, temb, use_reentrant=False)
            else:
                hidden_states = resnet(hidden_states, temb)

        if self.upsamplers is not None:
            for upsampler in self.upsamplers:
                hidden_states = upsampler(hidden_states, upsample_size)

        return hidden_states


def build_block():
    block = UpBlock2D(4, 4, 4, 8, resolution_idx=0)
    block.enable_freeu(s1=0.9, s2=0.2, b1=1.2, b2=1.4)
    return block


up_block = torch.compile(build_block(), fullgraph=False)


def make():
    torch.manual_seed(0)
    temb = torch.randn(1, 8)
    pow2 = (torch.randn(1, 4, 4, 4), (torch.randn(1, 4, 4, 4), torch.randn(1, 4, 4, 4)), temb)
    odd = (torch.randn(1, 4, 6, 6), (torch.randn(1, 4, 6, 6), torch.randn(1, 4, 6, 6)), temb, (12, 12))
    return build_block(), [pow2, odd]
