"""BEATs fine-tuned classifier: `extract_features` folds the padding mask to frame level, and the predictor branches on `if padding_mask is not None and padding_mask.any():` before `logits[padding_mask] = 0`.

Source: microsoft/unilm@c68101b66c2d2918b14af468d710b50feba48c16:beats/BEATs.py:BEATsConfig,BEATs
Also: beats/backbone.py (TransformerEncoder.extract_features's index_put of
the padding mask).
Kept: BEATsConfig, BEATs.__init__, forward_padding_mask, preprocess's loop
and normalisation, extract_features verbatim (both forward_padding_mask calls,
the finetuned predictor with the `.any()` branch and masked mean).
Simplified: torchaudio's kaldi fbank is a local framed log-power stand-in
(4 bins); the backbone is one masked self-attention layer behind the same
index_put; embed 8, patch 2, 2 classes.
"""
import logging
from typing import Optional

import torch
import torch.nn as nn
from torch.nn import LayerNorm

logger = logging.getLogger(__name__)


class BEATsConfig:
    def __init__(self, cfg=None):
        self.input_patch_size: int = -1  # path size of patch embedding
        self.embed_dim: int = 512  # patch embedding dimension
        self.conv_bias: bool = False  # include bias in conv encoder

        self.encoder_layers: int = 12  # num encoder layers in the transformer
        self.encoder_embed_dim: int = 768  # encoder embedding dimension
        self.encoder_ffn_embed_dim: int = 3072  # encoder embedding dimension for FFN
        self.encoder_attention_heads: int = 12  # num encoder attention heads
        self.activation_fn: str = "gelu"  # activation function to use

        self.layer_wise_gradient_decay_ratio: float = 1.0  # ratio for layer-wise gradient decay
        self.layer_norm_first: bool = False  # apply layernorm first in the transformer
        self.deep_norm: bool = False  # apply deep_norm first in the transformer

        # dropouts
        self.dropout: float = 0.1  # dropout probability for the transformer
        self.attention_dropout: float = 0.1  # dropout probability for attention weights
        self.activation_dropout: float = 0.0  # dropout probability after activation in FFN
        self.encoder_layerdrop: float = 0.0  # probability of dropping a tarnsformer layer
        self.dropout_input: float = 0.0  # dropout to apply to the input (after feat extr)

        # label predictor
        self.finetuned_model: bool = False  # whether the model is a fine-tuned model.
        self.predictor_dropout: float = 0.1  # dropout probability for the predictor
        self.predictor_class: int = 527  # target class number for the predictor

        if cfg is not None:
            self.update(cfg)

    def update(self, cfg: dict):
        self.__dict__.update(cfg)


class ta_kaldi:
    """Stand-in for torchaudio.compliance.kaldi: framed log power in equal-width bins."""

    @staticmethod
    def fbank(waveform, num_mel_bins=8, sample_frequency=16000, frame_length=25, frame_shift=10):
        win = int(sample_frequency * frame_length / 1000)
        hop = int(sample_frequency * frame_shift / 1000)
        frames = waveform[0].unfold(0, win, hop)
        power = torch.fft.rfft(frames * torch.hann_window(win), dim=-1).abs() ** 2
        bins = power[:, : (power.shape[-1] // num_mel_bins) * num_mel_bins]
        bins = bins.reshape(frames.shape[0], num_mel_bins, -1).sum(-1)
        return torch.log(bins + 1e-6)


def index_put(tensor, indices, value):
    tensor[indices] = value
    return tensor


class TransformerEncoder(nn.Module):
    """backbone.TransformerEncoder reduced to one masked self-attention layer."""

    def __init__(self, args):
        super().__init__()
        self.dropout = args.dropout
        self.embedding_dim = args.encoder_embed_dim
        self.qkv = nn.Linear(self.embedding_dim, 3 * self.embedding_dim)
        self.out_proj = nn.Linear(self.embedding_dim, self.embedding_dim)
        self.layer_norm = LayerNorm(self.embedding_dim)

    def forward(self, x, padding_mask=None, layer=None):
        x, layer_results = self.extract_features(x, padding_mask, layer)
        return x, layer_results

    def extract_features(self, x, padding_mask=None, tgt_layer=None):
        if padding_mask is not None:
            x = index_put(x, padding_mask, 0)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        attn = q @ k.transpose(1, 2) / self.embedding_dim ** 0.5
        if padding_mask is not None:
            attn = attn.masked_fill(padding_mask[:, None, :], float("-inf"))
        x = x + self.out_proj(attn.softmax(-1) @ v)
        x = self.layer_norm(x)
        return x, []


class BEATs(nn.Module):
    def __init__(
            self,
            cfg: BEATsConfig,
    ) -> None:
        super().__init__()
        logger.info(f"BEATs Config: {cfg.__dict__}")

        self.cfg = cfg

        self.embed = cfg.embed_dim
        self.post_extract_proj = (
            nn.Linear(self.embed, cfg.encoder_embed_dim)
            if self.embed != cfg.encoder_embed_dim
            else None
        )

        self.input_patch_size = cfg.input_patch_size
        self.patch_embedding = nn.Conv2d(1, self.embed, kernel_size=self.input_patch_size, stride=self.input_patch_size,
                                         bias=cfg.conv_bias)

        self.dropout_input = nn.Dropout(cfg.dropout_input)

        assert not cfg.deep_norm or not cfg.layer_norm_first
        self.encoder = TransformerEncoder(cfg)
        self.layer_norm = LayerNorm(self.embed)

        if cfg.finetuned_model:
            self.predictor_dropout = nn.Dropout(cfg.predictor_dropout)
            self.predictor = nn.Linear(cfg.encoder_embed_dim, cfg.predictor_class)
        else:
            self.predictor = None

    def forward_padding_mask(
            self,
            features: torch.Tensor,
            padding_mask: torch.Tensor,
    ) -> torch.Tensor:
        extra = padding_mask.size(1) % features.size(1)
        if extra > 0:
            padding_mask = padding_mask[:, :-extra]
        padding_mask = padding_mask.view(
            padding_mask.size(0), features.size(1), -1
        )
        padding_mask = padding_mask.all(-1)
        return padding_mask

    def preprocess(
            self,
            source: torch.Tensor,
            fbank_mean: float = 15.41663,
            fbank_std: float = 6.55582,
    ) -> torch.Tensor:
        fbanks = []
        for waveform in source:
            waveform = waveform.unsqueeze(0) * 2 ** 15
            fbank = ta_kaldi.fbank(waveform, num_mel_bins=4, sample_frequency=16000, frame_length=25, frame_shift=10)
            fbanks.append(fbank)
        fbank = torch.stack(fbanks, dim=0)
        fbank = (fbank - fbank_mean) / (2 * fbank_std)
        return fbank

    def extract_features(
            self,
            source: torch.Tensor,
            padding_mask: Optional[torch.Tensor] = None,
            fbank_mean: float = 15.41663,
            fbank_std: float = 6.55582,
    ):
        fbank = self.preprocess(source, fbank_mean=fbank_mean, fbank_std=fbank_std)

        if padding_mask is not None:
            padding_mask = self.forward_padding_mask(fbank, padding_mask)

        fbank = fbank.unsqueeze(1)
        features = self.patch_embedding(fbank)
        features = features.reshape(features.shape[0], features.shape[1], -1)
        features = features.transpose(1, 2)
        features = self.layer_norm(features)

        if padding_mask is not None:
            padding_mask = self.forward_padding_mask(features, padding_mask)

        if self.post_extract_proj is not None:
            features = self.post_extract_proj(features)

        x = self.dropout_input(features)

        x, layer_results = self.encoder(
            x,
            padding_mask=padding_mask,
        )

        if self.predictor is not None:
            x = self.predictor_dropout(x)
            logits = self.predictor(x)

            if padding_mask is not None and padding_mask.any():
                logits[padding_mask] = 0
                logits = logits.sum(dim=1)
                logits = logits / (~padding_mask).sum(dim=1).unsqueeze(-1).expand_as(logits)
            else:
                logits = logits.mean(dim=1)

            lprobs = torch.sigmoid(logits)

            return lprobs, padding_mask
        else:
            return x, padding_mask


class BEATsClassifier(nn.Module):
    """The README's usage: `BEATs_model.extract_features(audio, padding_mask=padding_mask)[0]`."""

    def __init__(self, cfg: BEATsConfig):
        super().__init__()
        self.beats = BEATs(cfg)

    def forward(self, audio, padding_mask=None):
        probs = self.beats.extract_features(audio, padding_mask=padding_mask)[0]
        return probs


CFG = {
    "input_patch_size": 2, "embed_dim": 8, "encoder_embed_dim": 8,
    "finetuned_model": True, "predictor_class": 2,
}


def make():
    torch.manual_seed(0)
    model = BEATsClassifier(BEATsConfig(CFG)).eval()
    audio = torch.randn(2, 1360) * 0.1
    padding_mask = torch.zeros(2, 1360, dtype=torch.bool)
    padding_mask[1, 700:] = True
    no_padding = torch.zeros(2, 1360, dtype=torch.bool)
    return model, [(audio, padding_mask), (audio, no_padding), (audio,)]


def load_for_inference():
    model = BEATsClassifier(BEATsConfig(CFG))
    model.eval()
    return torch.compile(model)
