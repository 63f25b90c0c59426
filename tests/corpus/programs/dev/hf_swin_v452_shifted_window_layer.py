"""Swin layer at v4.52.4: set_shift_and_window_size mutates self in forward, padding, cyclic shift, slice-built attn mask (no break).

Source: huggingface/transformers@v4.52.4:src/transformers/models/swin/modeling_swin.py:582-739
Kept: window_partition / window_reverse, set_shift_and_window_size (min of the
resolution, torch_int(0) shift), get_attn_mask with the 3x3 slice loop and
count, maybe_pad, the roll shifts, the window attention call with the mask
and the was_padded crop.
Simplified: window attention is a masked softmax over a linear projection;
dim 4, window 2, shift 1.
"""
import torch
from torch import nn


def torch_int(x):
    return x.to(torch.int64) if torch.jit.is_tracing() and isinstance(x, torch.Tensor) else int(x)


def window_partition(input_feature, window_size):
    batch_size, height, width, num_channels = input_feature.shape
    input_feature = input_feature.view(batch_size, height // window_size, window_size, width // window_size, window_size, num_channels)
    return input_feature.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, num_channels)


def window_reverse(windows, window_size, height, width):
    num_channels = windows.shape[-1]
    windows = windows.view(-1, height // window_size, width // window_size, window_size, window_size, num_channels)
    return windows.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, height, width, num_channels)


class SwinLayer(nn.Module):
    def __init__(self, dim=4, window_size=2, shift_size=1):
        super().__init__()
        self.shift_size = shift_size
        self.window_size = window_size
        self.layernorm_before = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, dim)

    def attention(self, hidden_states, attn_mask):
        scores = hidden_states @ self.qkv(hidden_states).transpose(-1, -2)
        if attn_mask is not None:
            scores = scores.view(-1, attn_mask.shape[0], *scores.shape[1:]) + attn_mask.unsqueeze(0)
            scores = scores.view(-1, *scores.shape[2:])
        return (scores.softmax(-1) @ hidden_states,)

    def set_shift_and_window_size(self, input_resolution):
        if min(input_resolution) <= self.window_size:
            self.shift_size = torch_int(0)
            self.window_size = torch.min(torch.tensor(input_resolution)) if torch.jit.is_tracing() else min(input_resolution)

    def get_attn_mask(self, height, width, dtype, device):
        if self.shift_size > 0:
            img_mask = torch.zeros((1, height, width, 1), dtype=dtype, device=device)
            height_slices = (slice(0, -self.window_size), slice(-self.window_size, -self.shift_size), slice(-self.shift_size, None))
            width_slices = (slice(0, -self.window_size), slice(-self.window_size, -self.shift_size), slice(-self.shift_size, None))
            count = 0
            for height_slice in height_slices:
                for width_slice in width_slices:
                    img_mask[:, height_slice, width_slice, :] = count
                    count += 1
            mask_windows = window_partition(img_mask, self.window_size)
            mask_windows = mask_windows.view(-1, self.window_size * self.window_size)
            attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
            attn_mask = attn_mask.masked_fill(attn_mask != 0, float(-100.0)).masked_fill(attn_mask == 0, float(0.0))
        else:
            attn_mask = None
        return attn_mask

    def maybe_pad(self, hidden_states, height, width):
        pad_right = (self.window_size - width % self.window_size) % self.window_size
        pad_bottom = (self.window_size - height % self.window_size) % self.window_size
        pad_values = (0, 0, 0, pad_right, 0, pad_bottom)
        hidden_states = nn.functional.pad(hidden_states, pad_values)
        return hidden_states, pad_values

    def forward(self, hidden_states, input_dimensions, always_partition=False):
        if not always_partition:
            self.set_shift_and_window_size(input_dimensions)
        height, width = input_dimensions
        batch_size, _, channels = hidden_states.size()
        shortcut = hidden_states
        hidden_states = self.layernorm_before(hidden_states)
        hidden_states = hidden_states.view(batch_size, height, width, channels)
        hidden_states, pad_values = self.maybe_pad(hidden_states, height, width)
        _, height_pad, width_pad, _ = hidden_states.shape
        if self.shift_size > 0:
            shifted_hidden_states = torch.roll(hidden_states, shifts=(-self.shift_size, -self.shift_size), dims=(1, 2))
        else:
            shifted_hidden_states = hidden_states
        hidden_states_windows = window_partition(shifted_hidden_states, self.window_size)
        hidden_states_windows = hidden_states_windows.view(-1, self.window_size * self.window_size, channels)
        attn_mask = self.get_attn_mask(height_pad, width_pad, dtype=hidden_states.dtype, device=hidden_states_windows.device)
        attention_output = self.attention(hidden_states_windows, attn_mask)[0]
        attention_windows = attention_output.view(-1, self.window_size, self.window_size, channels)
        shifted_windows = window_reverse(attention_windows, self.window_size, height_pad, width_pad)
        if self.shift_size > 0:
            attention_windows = torch.roll(shifted_windows, shifts=(self.shift_size, self.shift_size), dims=(1, 2))
        else:
            attention_windows = shifted_windows
        was_padded = pad_values[3] > 0 or pad_values[5] > 0
        if was_padded:
            attention_windows = attention_windows[:, :height, :width, :].contiguous()
        return shortcut + attention_windows.view(batch_size, height * width, channels)


layer = torch.compile(SwinLayer())


def make():
    torch.manual_seed(0)
    return SwinLayer(), [(torch.randn(1, 16, 4), (4, 4)), (torch.randn(1, 15, 4), (5, 3))]
