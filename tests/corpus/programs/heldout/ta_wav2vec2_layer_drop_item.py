"""torchaudio wav2vec2 Transformer: LayerDrop draws `torch.rand(1).item()` per layer while training.

Source: pytorch/audio@v2.11.0:src/torchaudio/models/wav2vec2/components.py:421-443
Kept: _preprocess (pos-conv add, layer_norm_first switch, dropout), the layer
loop with `not (self.training and torch.rand(1).item() <= self.layer_drop)`,
the (x, position_bias) tuple threading and the final layer norm.
Simplified: encoder layers are linear; pos_conv_embed is a depthwise conv1d;
embed dim 8, 3 layers, layer_drop 0.1.
"""
from typing import Optional

import torch
from torch import Tensor, nn


class EncoderLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ff = nn.Linear(dim, dim)

    def forward(self, x, attention_mask=None, position_bias=None):
        return x + self.ff(x), position_bias


class ConvolutionalPositionalEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.conv = nn.Conv1d(dim, dim, 3, padding=1, groups=dim)

    def forward(self, x):
        return nn.functional.gelu(self.conv(x.transpose(-2, -1))).transpose(-2, -1)


class Transformer(nn.Module):
    def __init__(self, dim=8, num_layers=3, dropout=0.0, layer_norm_first=False, layer_drop=0.1):
        super().__init__()
        self.pos_conv_embed = ConvolutionalPositionalEmbedding(dim)
        self.layer_norm = nn.LayerNorm(dim)
        self.layer_norm_first = layer_norm_first
        self.layer_drop = layer_drop
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList([EncoderLayer(dim) for _ in range(num_layers)])

    def _preprocess(self, x: Tensor):
        x = x + self.pos_conv_embed(x)
        if self.layer_norm_first:
            x = self.layer_norm(x)
        x = self.dropout(x)
        return x

    def forward(self, x: Tensor, attention_mask: Optional[Tensor] = None, position_bias: Optional[Tensor] = None) -> Tensor:
        x = self._preprocess(x)
        for layer in self.layers:
            if not (self.training and torch.rand(1).item() <= self.layer_drop):
                x, position_bias = layer(x, attention_mask, position_bias=position_bias)
        if not self.layer_norm_first:
            x = self.layer_norm(x)
        return x


def finetune_step(model, batch):
    model.train()
    return torch.compile(model)(batch).pow(2).mean()


def make():
    torch.manual_seed(0)
    return Transformer().train(), [(torch.randn(2, 5, 8),)]
