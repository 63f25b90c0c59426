"""torchaudio ConvTasNet: shape ValueError, frame alignment padding computed from Python ints, output trimmed (no break).

Source: pytorch/audio@v2.11.0:src/torchaudio/models/conv_tasnet.py:233-304
Kept: _align_num_frames_with_strides (is_odd, num_strides, the num_remainings
== 0 early return with a (tensor, 0) tuple, zero padding), forward's 3-D check,
encoder / mask generator / decoder plumbing with the views, and the
`if num_pads > 0` trim.
Simplified: the mask generator is a conv + sigmoid; 2 sources, 4 features,
kernel 4, stride 2.
"""
from typing import Tuple

import torch


class ConvTasNet(torch.nn.Module):
    def __init__(self, num_sources=2, enc_kernel_size=4, enc_num_feats=4):
        super().__init__()
        self.num_sources = num_sources
        self.enc_num_feats = enc_num_feats
        self.enc_kernel_size = enc_kernel_size
        self.enc_stride = enc_kernel_size // 2
        self.encoder = torch.nn.Conv1d(1, enc_num_feats, enc_kernel_size, stride=self.enc_stride, padding=self.enc_stride, bias=False)
        self.mask = torch.nn.Conv1d(enc_num_feats, enc_num_feats * num_sources, 1)
        self.decoder = torch.nn.ConvTranspose1d(enc_num_feats, 1, enc_kernel_size, stride=self.enc_stride, padding=self.enc_stride, bias=False)

    def mask_generator(self, feats):
        batch_size, _, frames = feats.shape
        return torch.sigmoid(self.mask(feats)).view(batch_size, self.num_sources, self.enc_num_feats, frames)

    def _align_num_frames_with_strides(self, input: torch.Tensor) -> Tuple[torch.Tensor, int]:
        batch_size, num_channels, num_frames = input.shape
        is_odd = self.enc_kernel_size % 2
        num_strides = (num_frames - is_odd) // self.enc_stride
        num_remainings = num_frames - (is_odd + num_strides * self.enc_stride)
        if num_remainings == 0:
            return input, 0
        num_paddings = self.enc_stride - num_remainings
        pad = torch.zeros(batch_size, num_channels, num_paddings, dtype=input.dtype, device=input.device)
        return torch.cat([input, pad], 2), num_paddings

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if input.ndim != 3 or input.shape[1] != 1:
            raise ValueError(f"Expected 3D tensor (batch, channel==1, frames). Found: {input.shape}")
        padded, num_pads = self._align_num_frames_with_strides(input)
        batch_size, num_padded_frames = padded.shape[0], padded.shape[2]
        feats = self.encoder(padded)
        masked = self.mask_generator(feats) * feats.unsqueeze(1)
        masked = masked.view(batch_size * self.num_sources, self.enc_num_feats, -1)
        decoded = self.decoder(masked)
        output = decoded.view(batch_size, self.num_sources, num_padded_frames)
        if num_pads > 0:
            output = output[..., :-num_pads]
        return output


def conv_tasnet_base():
    return ConvTasNet()


separator = torch.compile(conv_tasnet_base())


def make():
    torch.manual_seed(0)
    return conv_tasnet_base(), [(torch.randn(1, 1, 16),), (torch.randn(1, 1, 17),)]
