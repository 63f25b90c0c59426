"""ChatTTS DVAE decoder (the `decoder` DVAE built without encoder/VQ): custom `__call__` forwarding `mode`, `@torch.inference_mode()`-decorated forward, `hasattr(self, "encoder")` / `vq_layer is not None` dispatch, channel-pair view/permute/flatten of the GPT hidden states, ConvNeXt blocks with in-place `transpose_`, `del` of intermediates and in-place `y *= self.weight`, and `torch.mul(dec_out, self.coef, out=dec_out)`.

Source: 2noise/ChatTTS@1092c1ffcaa82f4bdef104c35aa5541227c3e1d7:ChatTTS/model/dvae.py:14-300
Also: ChatTTS/core.py:366-375 (`decoder = DVAE(decoder_config=asdict(self.config.decoder),
dim=self.config.decoder.idim, coef=coef, device=device)`, `self.decoder = decoder.eval()`),
ChatTTS/config/config.py (Decoder dataclass).
Kept: ConvNeXtBlock, DVAEDecoder and DVAE (__init__, __repr__, __call__, forward) verbatim.
Simplified: GFSQ (vector_quantize_pytorch), MelSpectrogramFeatures (torchaudio) and load_pretrained /
sample_audio are not included (the decoder DVAE builds neither quantizer nor encoder); pybase16384 is
not imported, so only `coef=None` (random coef) is used; Decoder config shrunk (idim 16, hidden 32,
2 layers, bn_dim 8); compiled with torch.compile(decoder.eval()).
"""
import math
from dataclasses import dataclass, asdict
from typing import List, Optional, Literal, Union

import numpy as np
import torch
import torch.nn as nn


# ---- ChatTTS/model/dvae.py ----
class ConvNeXtBlock(nn.Module):
    def __init__(
        self,
        dim: int,
        intermediate_dim: int,
        kernel: int,
        dilation: int,
        layer_scale_init_value: float = 1e-6,
    ):
        # ConvNeXt Block copied from Vocos.
        super().__init__()
        self.dwconv = nn.Conv1d(
            dim,
            dim,
            kernel_size=kernel,
            padding=dilation * (kernel // 2),
            dilation=dilation,
            groups=dim,
        )  # depthwise conv

        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(
            dim, intermediate_dim
        )  # pointwise/1x1 convs, implemented with linear layers
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(intermediate_dim, dim)
        self.weight = (
            nn.Parameter(layer_scale_init_value * torch.ones(dim), requires_grad=True)
            if layer_scale_init_value > 0
            else None
        )

    def forward(self, x: torch.Tensor, cond=None) -> torch.Tensor:
        residual = x

        y = self.dwconv(x)
        y.transpose_(1, 2)  # (B, C, T) -> (B, T, C)
        x = self.norm(y)
        del y
        y = self.pwconv1(x)
        del x
        x = self.act(y)
        del y
        y = self.pwconv2(x)
        del x
        if self.weight is not None:
            y *= self.weight
        y.transpose_(1, 2)  # (B, T, C) -> (B, C, T)

        x = y + residual
        del y

        return x


class DVAEDecoder(nn.Module):
    def __init__(
        self,
        idim: int,
        odim: int,
        n_layer=12,
        bn_dim=64,
        hidden=256,
        kernel=7,
        dilation=2,
        up=False,
    ):
        super().__init__()
        self.up = up
        self.conv_in = nn.Sequential(
            nn.Conv1d(idim, bn_dim, 3, 1, 1),
            nn.GELU(),
            nn.Conv1d(bn_dim, hidden, 3, 1, 1),
        )
        self.decoder_block = nn.ModuleList(
            [
                ConvNeXtBlock(
                    hidden,
                    hidden * 4,
                    kernel,
                    dilation,
                )
                for _ in range(n_layer)
            ]
        )
        self.conv_out = nn.Conv1d(hidden, odim, kernel_size=1, bias=False)

    def forward(self, x: torch.Tensor, conditioning=None) -> torch.Tensor:
        # B, C, T
        y = self.conv_in(x)
        del x
        for f in self.decoder_block:
            y = f(y, conditioning)

        x = self.conv_out(y)
        del y
        return x


class DVAE(nn.Module):
    def __init__(
        self,
        decoder_config: dict,
        encoder_config: Optional[dict] = None,
        vq_config: Optional[dict] = None,
        dim=512,
        coef: Optional[str] = None,
        device: torch.device = torch.device("cpu"),
    ):
        super().__init__()
        if coef is None:
            coef = torch.rand(100)
        else:
            coef = torch.from_numpy(
                np.frombuffer(b14.decode_from_string(coef), dtype=np.float32).copy()
            )
        self.register_buffer("coef", coef.unsqueeze(0).unsqueeze_(2))

        if encoder_config is not None:
            self.downsample_conv = nn.Sequential(
                nn.Conv1d(100, dim, 3, 1, 1),
                nn.GELU(),
                nn.Conv1d(dim, dim, 4, 2, 1),
                nn.GELU(),
            )
            self.preprocessor_mel = MelSpectrogramFeatures(device=device)
            self.encoder: Optional[DVAEDecoder] = DVAEDecoder(**encoder_config)

        self.decoder = DVAEDecoder(**decoder_config)
        self.out_conv = nn.Conv1d(dim, 100, 3, 1, 1, bias=False)
        if vq_config is not None:
            self.vq_layer = GFSQ(**vq_config)
        else:
            self.vq_layer = None

    def __repr__(self) -> str:
        return b14.encode_to_string(
            self.coef.cpu().numpy().astype(np.float32).tobytes()
        )

    def __call__(
        self, inp: torch.Tensor, mode: Literal["encode", "decode"] = "decode"
    ) -> torch.Tensor:
        return super().__call__(inp, mode)

    @torch.inference_mode()
    def forward(
        self, inp: torch.Tensor, mode: Literal["encode", "decode"] = "decode"
    ) -> torch.Tensor:
        if mode == "encode" and hasattr(self, "encoder") and self.vq_layer is not None:
            mel = self.preprocessor_mel(inp)
            x: torch.Tensor = self.downsample_conv(
                torch.div(mel, self.coef.view(100, 1).expand(mel.shape), out=mel),
            ).unsqueeze_(0)
            del mel
            x = self.encoder(x)
            ind = self.vq_layer(x)
            del x
            return ind

        if self.vq_layer is not None:
            vq_feats = self.vq_layer._embed(inp)
        else:
            vq_feats = inp

        vq_feats = (
            vq_feats.view(
                (vq_feats.size(0), 2, vq_feats.size(1) // 2, vq_feats.size(2)),
            )
            .permute(0, 2, 3, 1)
            .flatten(2)
        )

        dec_out = self.out_conv(
            self.decoder(
                x=vq_feats,
            ),
        )

        del vq_feats

        return torch.mul(dec_out, self.coef, out=dec_out)


# ---- ChatTTS/config/config.py ----
@dataclass(repr=False, eq=False)
class Decoder:
    idim: int = 384
    odim: int = 384
    hidden: int = 512
    n_layer: int = 12
    bn_dim: int = 128


def build_decoder():
    config_decoder = Decoder(idim=16, odim=16, hidden=32, n_layer=2, bn_dim=8)
    decoder = DVAE(
        decoder_config=asdict(config_decoder),
        dim=config_decoder.idim,
        coef=None,
        device=torch.device("cpu"),
    )
    return decoder.eval()


decoder = torch.compile(build_decoder())


def make():
    torch.manual_seed(0)
    # batch_result from Chat._decode_to_wavs: (B, gpt hidden, max_x_len)
    return build_decoder(), [(torch.randn(2, 32, 12),), (torch.randn(1, 32, 7), "decode")]
