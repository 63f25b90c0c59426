"""diffusers FreeU: apply_freeu scales half the channels and fourier_filters the skip, with dtype casts decided by shape bits (no break).

Source: huggingface/diffusers@58eb52c080:src/diffusers/utils/torch_utils.py:249-309
Kept: fourier_filter (power-of-two check on W and H, float32 cast, fftn /
fftshift, the centred mask assignment, inverse transform, real part, cast
back) and apply_freeu's resolution_idx switch with the kwargs dict, as called
by the up blocks when FreeU is enabled.
Simplified: called from a tiny up block; 4 channels, 8x8 maps.
"""
import torch
from torch.fft import fftn, fftshift, ifftn, ifftshift


def fourier_filter(x_in, threshold: int, scale: int):
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


def apply_freeu(resolution_idx: int, hidden_states, res_hidden_states, **freeu_kwargs):
    if resolution_idx == 0:
        num_half_channels = hidden_states.shape[1] // 2
        hidden_states[:, :num_half_channels] = hidden_states[:, :num_half_channels] * freeu_kwargs["b1"]
        res_hidden_states = fourier_filter(res_hidden_states, threshold=1, scale=freeu_kwargs["s1"])
    if resolution_idx == 1:
        num_half_channels = hidden_states.shape[1] // 2
        hidden_states[:, :num_half_channels] = hidden_states[:, :num_half_channels] * freeu_kwargs["b2"]
        res_hidden_states = fourier_filter(res_hidden_states, threshold=1, scale=freeu_kwargs["s2"])
    return hidden_states, res_hidden_states


class UpBlock2D(torch.nn.Module):
    def __init__(self, resolution_idx=0):
        super().__init__()
        self.resolution_idx = resolution_idx
        self.conv = torch.nn.Conv2d(8, 4, 3, padding=1)
        self.s1, self.s2, self.b1, self.b2 = 0.9, 0.2, 1.2, 1.4

    def forward(self, hidden_states, res_hidden_states):
        is_freeu_enabled = getattr(self, "s1", None) and getattr(self, "s2", None) and getattr(self, "b1", None) and getattr(self, "b2", None)
        if is_freeu_enabled:
            hidden_states, res_hidden_states = apply_freeu(
                self.resolution_idx, hidden_states, res_hidden_states, s1=self.s1, s2=self.s2, b1=self.b1, b2=self.b2
            )
        return self.conv(torch.cat([hidden_states, res_hidden_states], dim=1))


up_block = torch.compile(UpBlock2D())


def make():
    torch.manual_seed(0)
    return UpBlock2D(), [(torch.randn(1, 4, 8, 8), torch.randn(1, 4, 8, 8)), (torch.randn(1, 4, 6, 8), torch.randn(1, 4, 6, 8))]
