"""SpeechBrain's TransformerASR encoder masks: `make_masks` turns relative `wav_len` into `abs_len` and calls `length_to_mask(abs_len)`, whose `max_len is None` path reads `length.max().long().item()`.

Source: speechbrain/speechbrain@008055bf2c173949783b26165f35a1e7a6ded8d3:speechbrain/lobes/models/transformer/TransformerASR.py:249-300,351-390,427-460 (length_to_mask from speechbrain/dataio/dataio.py, get_key_padding_mask/get_lookahead_mask/PositionalEncoding from Transformer.py, same commit)
Kept: make_masks with its wav_len/causal/tgt branches, encode() with the 4-d
reshape, custom_src_module and fixed_abs_sine positional encoding,
EncoderWrapper whose forward is encode(), and length_to_mask's dtype/device
defaults.
Simplified: no chunked streaming masks, RelPosMHAXL or hypermixing; the
encoder is one torch TransformerEncoderLayer; d_model 8, 2 heads.
"""
import math

import torch
from torch import nn


def length_to_mask(length, max_len=None, dtype=None, device=None):
    """Creates a binary mask for each sequence."""
    assert len(length.shape) == 1

    if max_len is None:
        max_len = length.max().long().item()  # using arange to generate mask
    mask = torch.arange(
        max_len, device=length.device, dtype=length.dtype
    ).expand(len(length), max_len) < length.unsqueeze(1)

    if dtype is None:
        dtype = length.dtype

    if device is None:
        device = length.device

    mask = torch.as_tensor(mask, dtype=dtype, device=device)
    return mask


def get_key_padding_mask(padded_input, pad_idx):
    """Creates a binary mask to prevent attention to padded locations."""
    if len(padded_input.shape) == 4:
        bz, time, ch1, ch2 = padded_input.shape
        padded_input = padded_input.reshape(bz, time, ch1 * ch2)

    key_padded_mask = padded_input.eq(pad_idx).to(padded_input.device)

    # if the input is more than 2d, mask the locations where they are silence
    # across all channels
    if len(padded_input.shape) > 2:
        key_padded_mask = key_padded_mask.float().prod(dim=-1).bool()
        return key_padded_mask.detach()

    return key_padded_mask.detach()


def get_lookahead_mask(padded_input):
    """Creates a binary mask for each sequence which masks future frames."""
    seq_len = padded_input.shape[1]
    mask = (
        torch.triu(torch.ones((seq_len, seq_len), device=padded_input.device))
        == 1
    ).transpose(0, 1)
    mask = (
        mask.float()
        .masked_fill(mask == 0, float("-inf"))
        .masked_fill(mask == 1, float(0.0))
    )
    return mask.detach().to(padded_input.device)


class PositionalEncoding(nn.Module):
    """This class implements the absolute sinusoidal positional encoding function."""

    def __init__(self, input_size, max_len=2500):
        super().__init__()
        self.max_len = max_len
        pe = torch.zeros(self.max_len, input_size, requires_grad=False)
        positions = torch.arange(0, self.max_len).unsqueeze(1).float()
        denominator = torch.exp(
            torch.arange(0, input_size, 2).float()
            * -(math.log(10000.0) / input_size)
        )

        pe[:, 0::2] = torch.sin(positions * denominator)
        pe[:, 1::2] = torch.cos(positions * denominator)
        pe = pe.unsqueeze(0)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return self.pe[:, : x.size(1)].clone().detach()


class TransformerASR(nn.Module):
    """This is an implementation of transformer model for ASR (encoder side)."""

    def __init__(self, input_size, d_model=8, nhead=2, d_ffn=16, dropout=0.1, max_length=64, causal=False,
                 positional_encoding="fixed_abs_sine", attention_type="regularMHA"):
        super().__init__()
        self.causal = causal
        self.attention_type = attention_type
        self.positional_encoding_type = positional_encoding
        self.positional_encoding = PositionalEncoding(d_model, max_length)
        self.custom_src_module = nn.Sequential(nn.Linear(input_size, d_model), nn.Dropout(dropout))
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d_model, nhead, d_ffn, dropout, batch_first=True), num_layers=1
        )
        self._init_params()

    def make_masks(self, src, tgt=None, wav_len=None, pad_idx=0):
        """This method generates the masks for training the transformer model."""
        src_key_padding_mask = None
        if wav_len is not None:
            abs_len = torch.round(wav_len * src.shape[1])
            src_key_padding_mask = ~length_to_mask(abs_len).bool()

        src_mask = None

        if self.causal:
            src_mask = get_lookahead_mask(src)

        # If no decoder in the transformer...
        if tgt is not None:
            tgt_key_padding_mask = get_key_padding_mask(tgt, pad_idx=pad_idx)
            tgt_mask = get_lookahead_mask(tgt)
        else:
            tgt_key_padding_mask = None
            tgt_mask = None

        return src_key_padding_mask, tgt_key_padding_mask, src_mask, tgt_mask

    def encode(self, src, wav_len=None, pad_idx=0):
        """Encoder forward pass"""
        # reshape the src vector to [Batch, Time, Fea] if a 4d vector is given
        if src.dim() == 4:
            bz, t, ch1, ch2 = src.shape
            src = src.reshape(bz, t, ch1 * ch2)

        (src_key_padding_mask, _, src_mask, _,) = self.make_masks(
            src, None, wav_len, pad_idx=pad_idx
        )

        src = self.custom_src_module(src)
        if self.attention_type == "hypermixing":
            pos_embs_source = None
        elif self.positional_encoding_type == "fixed_abs_sine":
            src = src + self.positional_encoding(src)
            pos_embs_source = None

        encoder_out = self.encoder(
            src,
            mask=src_mask,
            src_key_padding_mask=src_key_padding_mask,
        )
        return encoder_out

    def _init_params(self):
        for p in self.parameters():
            if p.dim() > 1:
                torch.nn.init.xavier_normal_(p)


class EncoderWrapper(nn.Module):
    """A wrapper whose .forward() function is the transformer's .encode()."""

    def __init__(self, transformer, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.transformer = transformer

    def forward(self, x, wav_lens=None, pad_idx=0):
        x = self.transformer.encode(x, wav_lens, pad_idx)
        return x


def build_encoder(input_size=6):
    return EncoderWrapper(TransformerASR(input_size))


encoder = torch.compile(build_encoder(), dynamic=True)


def make():
    torch.manual_seed(0)
    feats = torch.randn(2, 5, 6)
    feats4d = torch.randn(2, 5, 3, 2)
    return build_encoder(), [(feats, torch.tensor([1.0, 0.6])), (feats,), (feats4d, torch.tensor([0.8, 1.0]))]
