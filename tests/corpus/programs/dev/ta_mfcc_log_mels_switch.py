"""torchaudio MFCC: MelSpectrogram, then `if self.log_mels:` log offset or AmplitudeToDB, then the DCT matmul (no break).

Source: pytorch/audio@v2.11.0:src/torchaudio/transforms/_transforms.py:640-718; src/torchaudio/functional/functional.py:356-404,636-667
Kept: create_dct (norm check, cos basis, the ortho scaling with an in-place
row write), amplitude_to_DB with its top_db packing, and MFCC (the dct_mat
buffer, the log_mels switch, the transposed matmul), for two configurations.
Simplified: MelSpectrogram is |stft|^2 times a fixed random non-negative
filterbank; n_fft 8, 4 mels, 3 coefficients.
"""
import math
from typing import Optional

import torch
from torch import Tensor


def create_dct(n_mfcc: int, n_mels: int, norm: Optional[str]) -> Tensor:
    if norm is not None and norm != "ortho":
        raise ValueError('norm must be either "ortho" or None')
    n = torch.arange(float(n_mels))
    k = torch.arange(float(n_mfcc)).unsqueeze(1)
    dct = torch.cos(math.pi / float(n_mels) * (n + 0.5) * k)
    if norm is None:
        dct *= 2.0
    else:
        dct[0] *= 1.0 / math.sqrt(2.0)
        dct *= math.sqrt(2.0 / float(n_mels))
    return dct.t()


def amplitude_to_DB(x: Tensor, multiplier: float, amin: float, db_multiplier: float, top_db: Optional[float] = None) -> Tensor:
    x_db = multiplier * torch.log10(torch.clamp(x, min=amin))
    x_db -= multiplier * db_multiplier
    if top_db is not None:
        shape = x_db.size()
        packed_channels = shape[-3] if x_db.dim() > 2 else 1
        x_db = x_db.reshape(-1, packed_channels, shape[-2], shape[-1])
        x_db = torch.max(x_db, (x_db.amax(dim=(-3, -2, -1)) - top_db).view(-1, 1, 1, 1))
        x_db = x_db.reshape(shape)
    return x_db


class MelSpectrogram(torch.nn.Module):
    def __init__(self, n_fft=8, n_mels=4):
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer("window", torch.hann_window(n_fft))
        self.register_buffer("fb", torch.rand(n_fft // 2 + 1, n_mels))

    def forward(self, waveform):
        spec = torch.stft(waveform, self.n_fft, hop_length=self.n_fft // 2, window=self.window, return_complex=True).abs().pow(2.0)
        return torch.matmul(spec.transpose(-1, -2), self.fb).transpose(-1, -2)


class MFCC(torch.nn.Module):
    def __init__(self, n_mfcc: int = 3, dct_type: int = 2, norm: str = "ortho", log_mels: bool = False):
        super().__init__()
        self.n_mfcc = n_mfcc
        self.norm = norm
        self.top_db = 80.0
        self.multiplier, self.amin, self.db_multiplier = 10.0, 1e-10, 0.0
        self.MelSpectrogram = MelSpectrogram()
        self.register_buffer("dct_mat", create_dct(self.n_mfcc, 4, self.norm))
        self.log_mels = log_mels

    def amplitude_to_DB(self, x):
        return amplitude_to_DB(x, self.multiplier, self.amin, self.db_multiplier, self.top_db)

    def forward(self, waveform: Tensor) -> Tensor:
        mel_specgram = self.MelSpectrogram(waveform)
        if self.log_mels:
            log_offset = 1e-6
            mel_specgram = torch.log(mel_specgram + log_offset)
        else:
            mel_specgram = self.amplitude_to_DB(mel_specgram)
        mfcc = torch.matmul(mel_specgram.transpose(-1, -2), self.dct_mat).transpose(-1, -2)
        return mfcc


class Features(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.db = MFCC(log_mels=False)
        self.log = MFCC(log_mels=True, norm=None)

    def forward(self, waveform):
        return self.db(waveform), self.log(waveform)


features = torch.compile(Features())


def make():
    torch.manual_seed(0)
    return Features(), [(torch.randn(1, 32),)]
