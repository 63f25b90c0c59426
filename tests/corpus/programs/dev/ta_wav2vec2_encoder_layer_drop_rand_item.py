"""torchaudio wav2vec2 Encoder: padded frames zeroed by a mask, then LayerDrop's torch.rand(1).item() (training only).

Source: pytorch/audio@27ca542b4b:src/torchaudio/models/wav2vec2/components.py:180-450
Kept: SelfAttention's attention-mask shape ValueError and SDPA with
dropout only in training, FeedForward, EncoderLayer's layer_norm_first
switch and (x, position_bias) tuple, Transformer._preprocess and the LayerDrop
loop `if not (self.training and self.layer_drop > 0 and torch.rand(1).item() <= self.layer_drop)`,
Encoder._preprocess (arange >= lengths mask, `x[mask] = 0.0`, -10000 attention
mask expanded), ConvolutionalPositionalEmbedding (even kernel drops a frame).
Simplified: embed_dim 8, 2 heads, 2 layers, pos kernel 4; no weight norm on
the positional conv; feature projection is LayerNorm + Linear.
"""
from typing import Optional, Tuple

import torch
from torch import Tensor, nn
from torch.nn import Module


class ConvolutionalPositionalEmbedding(Module):
    def __init__(self, embed_dim: int, kernel_size: int, groups: int):
        super().__init__()
        self.embed_dim = embed_dim
        self.kernel_size = kernel_size
        self.conv = nn.Conv1d(embed_dim, embed_dim, kernel_size=kernel_size, padding=kernel_size // 2, groups=groups)
        self.num_remove: int = 1 if kernel_size % 2 == 0 else 0

    def forward(self, x):
        x = x.transpose(-2, -1)
        x = self.conv(x)
        if self.num_remove > 0:
            x = x[..., : -self.num_remove]
        x = torch.nn.functional.gelu(x)
        x = x.transpose(-2, -1)
        return x


class FeatureProjection(Module):
    def __init__(self, in_features: int, out_features: int, dropout: float):
        super().__init__()
        self.layer_norm = nn.LayerNorm(in_features)
        self.projection = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        x = self.layer_norm(x)
        x = self.projection(x)
        x = self.dropout(x)
        return x


class SelfAttention(Module):
    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        head_dim = embed_dim // num_heads
        if head_dim * num_heads != embed_dim:
            raise ValueError(f"`embed_dim ({embed_dim})` is not divisible by `num_heads ({num_heads})`")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.head_dim = head_dim
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=True)

    def forward(
        self,
        x: Tensor,
        attention_mask: Optional[Tensor] = None,
        position_bias: Optional[Tensor] = None,
        key_padding_mask: Optional[Tensor] = None,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        if x.ndim != 3 or x.shape[2] != self.embed_dim:
            raise ValueError(
                f"The expected input shape is (batch, sequence, embed_dim=={self.embed_dim}). " f"Found {x.shape}."
            )
        batch_size, length, embed_dim = x.size()
        if attention_mask is not None:
            shape_ = (batch_size, 1, length, length)
            if attention_mask.size() != shape_:
                raise ValueError(f"The expected attention mask shape is {shape_}. " f"Found {attention_mask.size()}.")

        shape = (batch_size, length, self.num_heads, self.head_dim)
        q = self.q_proj(x).view(*shape).transpose(2, 1)
        k = self.k_proj(x).view(*shape).transpose(2, 1)
        v = self.v_proj(x).view(*shape).transpose(2, 1)
        dropout = self.dropout if self.training else 0.0
        attn_output = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=attention_mask, dropout_p=dropout, is_causal=False
        )
        attn_output = attn_output.transpose(1, 2).reshape(batch_size, -1, self.num_heads * self.head_dim)
        output = self.out_proj(attn_output)
        return output, None


class FeedForward(Module):
    def __init__(self, io_features, intermediate_features, intermediate_dropout, output_dropout):
        super().__init__()
        self.intermediate_dense = nn.Linear(io_features, intermediate_features)
        self.intermediate_dropout = nn.Dropout(intermediate_dropout)
        self.output_dense = nn.Linear(intermediate_features, io_features)
        self.output_dropout = nn.Dropout(output_dropout)

    def forward(self, x):
        x = self.intermediate_dense(x)
        x = torch.nn.functional.gelu(x)
        x = self.intermediate_dropout(x)
        x = self.output_dense(x)
        x = self.output_dropout(x)
        return x


class EncoderLayer(Module):
    def __init__(self, attention: Module, dropout: float, layer_norm_first: bool, feed_forward: Module):
        super().__init__()
        self.attention = attention
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(attention.embed_dim)
        self.layer_norm_first = layer_norm_first
        self.feed_forward = feed_forward
        self.final_layer_norm = nn.LayerNorm(attention.embed_dim)

    def forward(
        self,
        x: Tensor,
        attention_mask: Optional[Tensor] = None,
        position_bias: Optional[Tensor] = None,
        key_padding_mask: Optional[Tensor] = None,
    ) -> Tuple[Tensor, Optional[Tensor]]:
        residual = x
        if self.layer_norm_first:
            x = self.layer_norm(x)
        x, position_bias = self.attention(
            x, attention_mask=attention_mask, position_bias=position_bias, key_padding_mask=key_padding_mask
        )
        x = self.dropout(x)
        x = residual + x
        if self.layer_norm_first:
            x = x + self.feed_forward(self.final_layer_norm(x))
        else:
            x = self.layer_norm(x)
            x = self.final_layer_norm(x + self.feed_forward(x))
        return x, position_bias


class Transformer(Module):
    def __init__(self, pos_conv_embed: Module, dropout: float, layers: Module, layer_norm_first: bool,
                 layer_drop: float):
        super().__init__()
        self.pos_conv_embed = pos_conv_embed
        self.layer_norm = nn.LayerNorm(pos_conv_embed.embed_dim)
        self.layer_norm_first = layer_norm_first
        self.layer_drop = layer_drop
        self.dropout = nn.Dropout(dropout)
        self.layers = layers

    def _preprocess(self, x: Tensor):
        x = x + self.pos_conv_embed(x)
        if self.layer_norm_first:
            x = self.layer_norm(x)
        x = self.dropout(x)
        return x

    def forward(self, x: Tensor, attention_mask: Optional[Tensor] = None,
                position_bias: Optional[Tensor] = None) -> Tensor:
        x = self._preprocess(x)
        for layer in self.layers:
            if not (self.training and self.layer_drop > 0 and torch.rand(1).item() <= self.layer_drop):
                x, position_bias = layer(x, attention_mask, position_bias=position_bias)

        if not self.layer_norm_first:
            x = self.layer_norm(x)
        return x


class Encoder(Module):
    def __init__(self, feature_projection: Module, transformer: Module):
        super().__init__()
        self.feature_projection = feature_projection
        self.transformer = transformer

    def _preprocess(self, features: Tensor, lengths: Optional[Tensor] = None) -> Tuple[Tensor, Optional[Tensor]]:
        x = self.feature_projection(features)

        mask: Optional[Tensor] = None
        if lengths is not None:
            batch_size, max_len, _ = x.shape
            mask = torch.arange(max_len, device=lengths.device).expand(batch_size, max_len) >= lengths[:, None]
            x[mask] = 0.0
            mask = -10000.0 * mask[:, None, None, :].to(dtype=features.dtype)
            mask = mask.expand(batch_size, 1, max_len, max_len)
        return x, mask

    def forward(self, features: Tensor, lengths: Optional[Tensor] = None) -> Tensor:
        x, mask = self._preprocess(features, lengths)
        x = self.transformer(x, attention_mask=mask)
        return x


def _get_encoder(in_features, embed_dim, dropout_input, pos_conv_kernel, pos_conv_groups, num_layers, num_heads,
                 attention_dropout, ff_interm_features, ff_interm_dropout, dropout, layer_norm_first, layer_drop):
    feature_projection = FeatureProjection(in_features, embed_dim, dropout_input)
    pos_conv = ConvolutionalPositionalEmbedding(embed_dim, pos_conv_kernel, pos_conv_groups)
    encoder_layers = nn.ModuleList()
    for _ in range(num_layers):
        attention = SelfAttention(embed_dim=embed_dim, num_heads=num_heads, dropout=attention_dropout)
        feed_forward = FeedForward(embed_dim, ff_interm_features, ff_interm_dropout, dropout)
        encoder_layers.append(EncoderLayer(attention, dropout, layer_norm_first, feed_forward))
    transformer = Transformer(pos_conv, dropout, encoder_layers, layer_norm_first, layer_drop)
    return Encoder(feature_projection, transformer)


def build():
    return _get_encoder(6, 8, 0.1, 4, 2, 2, 2, 0.1, 16, 0.0, 0.1, False, 0.1).eval()


encoder = build()
encoder.compile()


def make():
    torch.manual_seed(0)
    features = torch.randn(2, 5, 6)
    return build(), [(features, torch.tensor([5, 3])), (features, None)]
