"""NaturalSpeech2 pitch embedding: `f0_to_coarse` writes through boolean masks and asserts on the coarse bins' max/min before the embedding lookup.

Source: lucidrains/naturalspeech2-pytorch@659bec7f7543e7747e809e950cc2f84242fbeec7:naturalspeech2_pytorch/naturalspeech2_pytorch.py:164-175
Also: naturalspeech2_pytorch.py:1449-1455 (NaturalSpeech2.expand_encodings: the pitch
embedding of `f0_to_coarse(pitch)` expanded through the alignment matrix).
Kept: f0_to_coarse verbatim (masked reads and writes, the tuple-message assert) and
expand_encodings' two einsums; the model holds `pitch_emb` as in the original.
Simplified: einops rearrange written as squeeze/transpose; dims 8, 5 phonemes, 7 frames.
"""
import torch
from torch import nn, einsum


def f0_to_coarse(f0, f0_bin = 256, f0_max = 1100.0, f0_min = 50.0):
    f0_mel_max = 1127 * torch.log(1 + torch.tensor(f0_max) / 700)
    f0_mel_min = 1127 * torch.log(1 + torch.tensor(f0_min) / 700)

    f0_mel = 1127 * (1 + f0 / 700).log()
    f0_mel[f0_mel > 0] = (f0_mel[f0_mel > 0] - f0_mel_min) * (f0_bin - 2) / (f0_mel_max - f0_mel_min) + 1

    f0_mel[f0_mel <= 1] = 1
    f0_mel[f0_mel > f0_bin - 1] = f0_bin - 1
    f0_coarse = (f0_mel + 0.5).int()
    assert f0_coarse.max() <= 255 and f0_coarse.min() >= 1, (f0_coarse.max(), f0_coarse.min())
    return f0_coarse


class NaturalSpeech2(nn.Module):
    def __init__(self, dim = 8):
        super().__init__()
        self.pitch_emb = nn.Embedding(256, dim)

    def expand_encodings(self, phoneme_enc, attn, pitch):
        expanded_dur = einsum('k l m n, k j m -> k j n', attn, phoneme_enc)
        pitch_emb = self.pitch_emb(f0_to_coarse(pitch).squeeze(1))
        pitch_emb = pitch_emb.transpose(1, 2)
        expanded_pitch = einsum('k l m n, k j m -> k j n', attn, pitch_emb)
        expanded_encodings = expanded_dur + expanded_pitch
        return expanded_encodings

    def forward(self, phoneme_enc, attn, pitch):
        return self.expand_encodings(phoneme_enc, attn, pitch)


model = NaturalSpeech2()
model.expand_encodings = torch.compile(model.expand_encodings)


def make():
    torch.manual_seed(0)
    phoneme_enc = torch.randn(2, 8, 5)
    attn = torch.rand(2, 1, 5, 5)
    voiced = torch.tensor([[[120., 0., 240., 2000., 90.]], [[0., 0., 310., 150., 60.]]])
    unvoiced = torch.zeros(2, 1, 5)
    return NaturalSpeech2(), [(phoneme_enc, attn, voiced), (phoneme_enc, attn, unvoiced)]
