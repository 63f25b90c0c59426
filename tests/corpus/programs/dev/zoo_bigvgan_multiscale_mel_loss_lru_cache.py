"""BigVGAN-v2 MultiScaleMelSpectrogramLoss: per scale, windows and mel filters come from `@staticmethod @functools.lru_cache(None)` helpers and are turned into tensors with `torch.from_numpy` inside forward; the discriminator loss appends `r_loss.item()`/`g_loss.item()` to lists.

Source: NVIDIA/BigVGAN@88e8e6047e0b283cd289530761c26a444ca60a24:loss.py:22-214,228-245
Kept: MultiScaleMelSpectrogramLoss.__init__/get_window/get_mel_filters/
mel_spectrogram/forward verbatim (STFTParams namedtuple, match_stride padding,
the kwargs dict per scale, log10 via torch.log(torch.tensor(10.0))), and
discriminator_loss verbatim; a generator step calls both as train.py does.
Simplified: scipy.signal.get_window is numpy's hanning, librosa.filters.mel a
numpy triangular filterbank (same arguments); scales [16, 32] with 4 and 8
mels; the discriminator is a Conv1d; match_stride is False, as train.py
builds the loss (with it on, the verbatim `wav.reshape(-1, T)` after padding
cannot run).
"""
import functools
import math
import typing
from collections import namedtuple
from typing import List, Tuple

import numpy as np
import torch
import torch.nn as nn


def librosa_mel_fn(sr, n_fft, n_mels, fmin, fmax):
    # Stand-in for librosa.filters.mel: triangular filters on a linear grid.
    fmax = sr / 2.0 if fmax is None else fmax
    n_freqs = 1 + n_fft // 2
    fftfreqs = np.linspace(0, sr / 2.0, n_freqs)
    pts = np.linspace(fmin, fmax, n_mels + 2)
    weights = np.zeros((n_mels, n_freqs), dtype=np.float32)
    for i in range(n_mels):
        lower = (fftfreqs - pts[i]) / (pts[i + 1] - pts[i])
        upper = (pts[i + 2] - fftfreqs) / (pts[i + 2] - pts[i + 1])
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    return weights


class signal:
    @staticmethod
    def get_window(window_type, window_length):
        # Stand-in for scipy.signal.get_window("hann", n) (periodic Hann).
        assert window_type == "hann"
        return np.hanning(window_length + 1)[:-1]


class MultiScaleMelSpectrogramLoss(nn.Module):
    def __init__(
        self,
        sampling_rate: int,
        n_mels: List[int] = [5, 10, 20, 40, 80, 160, 320],
        window_lengths: List[int] = [32, 64, 128, 256, 512, 1024, 2048],
        loss_fn: typing.Callable = nn.L1Loss(),
        clamp_eps: float = 1e-5,
        mag_weight: float = 0.0,
        log_weight: float = 1.0,
        pow: float = 1.0,
        weight: float = 1.0,
        match_stride: bool = False,
        mel_fmin: List[float] = [0, 0, 0, 0, 0, 0, 0],
        mel_fmax: List[float] = [None, None, None, None, None, None, None],
        window_type: str = "hann",
    ):
        super().__init__()
        self.sampling_rate = sampling_rate

        STFTParams = namedtuple(
            "STFTParams",
            ["window_length", "hop_length", "window_type", "match_stride"],
        )

        self.stft_params = [
            STFTParams(
                window_length=w,
                hop_length=w // 4,
                match_stride=match_stride,
                window_type=window_type,
            )
            for w in window_lengths
        ]
        self.n_mels = n_mels
        self.loss_fn = loss_fn
        self.clamp_eps = clamp_eps
        self.log_weight = log_weight
        self.mag_weight = mag_weight
        self.weight = weight
        self.mel_fmin = mel_fmin
        self.mel_fmax = mel_fmax
        self.pow = pow

    @staticmethod
    @functools.lru_cache(None)
    def get_window(
        window_type,
        window_length,
    ):
        return signal.get_window(window_type, window_length)

    @staticmethod
    @functools.lru_cache(None)
    def get_mel_filters(sr, n_fft, n_mels, fmin, fmax):
        return librosa_mel_fn(sr=sr, n_fft=n_fft, n_mels=n_mels, fmin=fmin, fmax=fmax)

    def mel_spectrogram(
        self,
        wav,
        n_mels,
        fmin,
        fmax,
        window_length,
        hop_length,
        match_stride,
        window_type,
    ):
        B, C, T = wav.shape

        if match_stride:
            assert (
                hop_length == window_length // 4
            ), "For match_stride, hop must equal n_fft // 4"
            right_pad = math.ceil(T / hop_length) * hop_length - T
            pad = (window_length - hop_length) // 2
        else:
            right_pad = 0
            pad = 0

        wav = torch.nn.functional.pad(wav, (pad, pad + right_pad), mode="reflect")

        window = self.get_window(window_type, window_length)
        window = torch.from_numpy(window).to(wav.device).float()

        stft = torch.stft(
            wav.reshape(-1, T),
            n_fft=window_length,
            hop_length=hop_length,
            window=window,
            return_complex=True,
            center=True,
        )
        _, nf, nt = stft.shape
        stft = stft.reshape(B, C, nf, nt)
        if match_stride:
            """
            Drop first two and last two frames, which are added, because of padding. Now num_frames * hop_length = num_samples.
            """
            stft = stft[..., 2:-2]
        magnitude = torch.abs(stft)

        nf = magnitude.shape[2]
        mel_basis = self.get_mel_filters(
            self.sampling_rate, 2 * (nf - 1), n_mels, fmin, fmax
        )
        mel_basis = torch.from_numpy(mel_basis).to(wav.device)
        mel_spectrogram = magnitude.transpose(2, -1) @ mel_basis.T
        mel_spectrogram = mel_spectrogram.transpose(-1, 2)

        return mel_spectrogram

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        loss = 0.0
        for n_mels, fmin, fmax, s in zip(
            self.n_mels, self.mel_fmin, self.mel_fmax, self.stft_params
        ):
            kwargs = {
                "n_mels": n_mels,
                "fmin": fmin,
                "fmax": fmax,
                "window_length": s.window_length,
                "hop_length": s.hop_length,
                "match_stride": s.match_stride,
                "window_type": s.window_type,
            }

            x_mels = self.mel_spectrogram(x, **kwargs)
            y_mels = self.mel_spectrogram(y, **kwargs)
            x_logmels = torch.log(
                x_mels.clamp(min=self.clamp_eps).pow(self.pow)
            ) / torch.log(torch.tensor(10.0))
            y_logmels = torch.log(
                y_mels.clamp(min=self.clamp_eps).pow(self.pow)
            ) / torch.log(torch.tensor(10.0))

            loss += self.log_weight * self.loss_fn(x_logmels, y_logmels)
            loss += self.mag_weight * self.loss_fn(x_mels, y_mels)

        return loss * self.weight


def discriminator_loss(
    disc_real_outputs: List[torch.Tensor], disc_generated_outputs: List[torch.Tensor]
) -> Tuple[torch.Tensor, List[torch.Tensor], List[torch.Tensor]]:

    loss = 0
    r_losses = []
    g_losses = []
    for dr, dg in zip(disc_real_outputs, disc_generated_outputs):
        r_loss = torch.mean((1 - dr) ** 2)
        g_loss = torch.mean(dg**2)
        loss += r_loss + g_loss
        r_losses.append(r_loss.item())
        g_losses.append(g_loss.item())

    return loss, r_losses, g_losses


class TrainStep(nn.Module):
    def __init__(self, match_stride=False):
        super().__init__()
        self.fn_mel_loss_multiscale = MultiScaleMelSpectrogramLoss(
            sampling_rate=8000, n_mels=[4, 8], window_lengths=[16, 32],
            mel_fmin=[0, 0], mel_fmax=[None, None], match_stride=match_stride,
        )
        self.mpd = nn.Conv1d(1, 1, 5, stride=2)

    def forward(self, y, y_g_hat):
        y_df_hat_r = [self.mpd(y)]
        y_df_hat_g = [self.mpd(y_g_hat.detach())]
        loss_disc_f, losses_disc_f_r, losses_disc_f_g = discriminator_loss(y_df_hat_r, y_df_hat_g)
        loss_mel = self.fn_mel_loss_multiscale(y, y_g_hat) * 45.0
        return loss_disc_f, loss_mel, losses_disc_f_r


def build(match_stride=False):
    return torch.compile(TrainStep(match_stride))


def make():
    torch.manual_seed(0)
    y = torch.randn(2, 1, 64) * 0.3
    y_g_hat = torch.randn(2, 1, 64) * 0.3
    return TrainStep(), [(y, y_g_hat)]
