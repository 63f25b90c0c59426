"""torchaudio wav2vec2 FeatureExtractor + Encoder._preprocess: lengths via torch.div, masked assignment of padding (no break).

Source: pytorch/audio@v2.11.0:src/torchaudio/models/wav2vec2/components.py:77-143,476-492
Kept: ConvLayerBlock.forward (conv, optional layer norm, gelu, the floor-div
length update clamped at zero), FeatureExtractor.forward (the 2-D ValueError,
unsqueeze, layer loop, transpose), Encoder._preprocess (feature projection,
the arange >= lengths mask, `x[mask] = 0.0`, the -10000 attention bias).
Simplified: two conv layers (kernel 3, stride 2), 4 channels, projection to 8.
"""
from typing import Optional, Tuple

import torch
from torch import Tensor, nn


class ConvLayerBlock(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride, bias=False, layer_norm=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.layer_norm = layer_norm
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, stride=stride, bias=bias)

    def forward(self, x: Tensor, length: Optional[Tensor]) -> Tuple[Tensor, Optional[Tensor]]:
        x = self.conv(x)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        x = nn.functional.gelu(x)
        if length is not None:
            length = torch.div(length - self.kernel_size, self.stride, rounding_mode="floor") + 1
            length = torch.max(torch.zeros_like(length), length)
        return x, length


class FeatureExtractor(nn.Module):
    def __init__(self, conv_layers: nn.ModuleList):
        super().__init__()
        self.conv_layers = conv_layers

    def forward(self, x: Tensor, length: Optional[Tensor]) -> Tuple[Tensor, Optional[Tensor]]:
        if x.ndim != 2:
            raise ValueError(f"Expected the input Tensor to be 2D (batch, time). Found: {list(x.shape)}")
        x = x.unsqueeze(1)
        for layer in self.conv_layers:
            x, length = layer(x, length)
        x = x.transpose(1, 2)
        return x, length


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.feature_projection = nn.Linear(4, 8)

    def _preprocess(self, features: Tensor, lengths: Optional[Tensor] = None):
        x = self.feature_projection(features)
        mask: Optional[Tensor] = None
        if lengths is not None:
            batch_size, max_len, _ = x.shape
            mask = torch.arange(max_len, device=lengths.device).expand(batch_size, max_len) >= lengths[:, None]
            x[mask] = 0.0
            mask = -10000.0 * mask[:, None, None, :].to(dtype=features.dtype)
            mask = mask.expand(batch_size, 1, max_len, max_len)
        return x, mask

    def forward(self, features, lengths=None):
        x, mask = self._preprocess(features, lengths)
        return x if mask is None else x + mask.mean((1, 2))[..., None]


class Wav2Vec2Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.feature_extractor = FeatureExtractor(nn.ModuleList([ConvLayerBlock(1, 4, 3, 2), ConvLayerBlock(4, 4, 3, 2)]))
        self.encoder = Encoder()

    def forward(self, waveforms: Tensor, lengths: Optional[Tensor] = None):
        x, lengths = self.feature_extractor(waveforms, lengths)
        x = self.encoder(x, lengths)
        return x, lengths


model = torch.compile(Wav2Vec2Model())


def make():
    torch.manual_seed(0)
    wav = torch.randn(2, 32)
    return Wav2Vec2Model(), [(wav, torch.tensor([32, 20])), (wav,)]
