"""BC-ResNet keyword-spotting preprocessing: per-sample background-noise mixing decided by `labels[idx] != 0` and Python/NumPy randomness, a random time shift with zero padding, clamp, then the log-mel feature.

Source: Qualcomm-AI-research/bcresnet@aaa6eb8c7f4f35824aa56e58c75581631d45c6ed:utils.py:90-193
Kept: Preprocess.__init__ / __call__ (the augment loop with random.random / np.random.uniform /
random.choice / random.randint, the is_train shift branch, in-place `x[idx] = ...`, the
specaug loop calling spec_augment) and LogMel.__call__ (`self.mel = self.mel.to(self.device)`,
`(self.mel(x) + 1e-6).log()`) verbatim; main.py builds the train and test preprocessors.
Simplified: torchaudio is not imported: the background noise clips are passed in instead of
loaded from wav files, and torchaudio.transforms.MelSpectrogram is replaced by a small
nn.Module doing the same thing (hann-window STFT power spectrum times a triangular mel
filterbank buffer). 1 s clips at 16 kHz as in the original; batch of 3.
"""
import random

import numpy as np
import torch
from torch import nn

SR = 16000


class MelSpectrogram(nn.Module):
    # stand-in for torchaudio.transforms.MelSpectrogram(power=2.0)
    def __init__(self, sample_rate, hop_length, n_fft, win_length, n_mels):
        super().__init__()
        self.hop_length = hop_length
        self.n_fft = n_fft
        self.win_length = win_length
        self.register_buffer("window", torch.hann_window(win_length))
        n_freqs = n_fft // 2 + 1
        all_freqs = torch.linspace(0, sample_rate // 2, n_freqs)
        m_pts = torch.linspace(0.0, 2595.0 * np.log10(1.0 + (sample_rate / 2) / 700.0), n_mels + 2)
        f_pts = 700.0 * (10 ** (m_pts / 2595.0) - 1.0)
        f_diff = f_pts[1:] - f_pts[:-1]
        slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)
        down_slopes = (-1.0 * slopes[:, :-2]) / f_diff[:-1]
        up_slopes = slopes[:, 2:] / f_diff[1:]
        self.register_buffer("fb", torch.clamp(torch.min(down_slopes, up_slopes), min=0.0))

    def forward(self, waveform):
        shape = waveform.size()
        waveform = waveform.reshape(-1, shape[-1])
        spec = torch.stft(waveform, self.n_fft, self.hop_length, self.win_length, self.window,
                          center=True, pad_mode="reflect", return_complex=True)
        spec = spec.abs().pow(2.0)
        mel = torch.matmul(spec.transpose(-1, -2), self.fb).transpose(-1, -2)
        return mel.reshape(shape[:-1] + mel.shape[-2:])


def spec_augment(
    x, frequency_masking_para=20, time_masking_para=20, frequency_mask_num=2, time_mask_num=2
):
    lenF, lenT = x.shape[1:3]
    # Frequency masking
    for _ in range(frequency_mask_num):
        f = np.random.uniform(low=0.0, high=frequency_masking_para)
        f = int(f)
        f0 = random.randint(0, lenF - f)
        x[:, f0 : f0 + f, :] = 0
    # Time masking
    for _ in range(time_mask_num):
        t = np.random.uniform(low=0.0, high=time_masking_para)
        t = int(t)
        t0 = random.randint(0, lenT - t)
        x[:, :, t0 : t0 + t] = 0
    return x


class Preprocess:
    def __init__(
        self,
        background_noise,
        device,
        hop_length=160,
        win_length=480,
        n_fft=512,
        n_mels=40,
        specaug=False,
        sample_rate=SR,
        frequency_masking_para=7,
        time_masking_para=20,
        frequency_mask_num=2,
        time_mask_num=2,
    ):
        if background_noise is None:
            self.background_noise = []
        else:
            self.background_noise = list(background_noise)
            assert len(self.background_noise) != 0
        self.feature = LogMel(
            device,
            sample_rate=sample_rate,
            hop_length=hop_length,
            win_length=win_length,
            n_fft=n_fft,
            n_mels=n_mels,
        )
        self.sample_len = sample_rate
        self.specaug = specaug
        self.device = device
        if self.specaug:
            self.frequency_masking_para = frequency_masking_para
            self.time_masking_para = time_masking_para
            self.frequency_mask_num = frequency_mask_num
            self.time_mask_num = time_mask_num
            print(
                "frequency specaug %d %d" % (self.frequency_mask_num, self.frequency_masking_para)
            )
            print("time specaug %d %d" % (self.time_mask_num, self.time_masking_para))

    def __call__(self, x, labels, augment=True, noise_prob=0.8, is_train=True):
        assert len(x.shape) == 3
        if augment:
            for idx in range(x.shape[0]):
                if labels[idx] != 0 and (not is_train or random.random() > noise_prob):
                    continue
                noise_amp = (
                    np.random.uniform(0, 0.1) if labels[idx] != 0 else np.random.uniform(0, 1)
                )
                noise = random.choice(self.background_noise).to(self.device)
                sample_loc = random.randint(0, noise.shape[-1] - self.sample_len)
                noise = noise_amp * noise[:, sample_loc : sample_loc + SR]

                if is_train:
                    x_shift = int(np.random.uniform(-0.1, 0.1) * SR)
                    zero_padding = torch.zeros(1, np.abs(x_shift)).to(self.device)
                    if x_shift < 0:
                        temp_x = torch.cat([zero_padding, x[idx, :, :x_shift]], dim=-1)
                    else:
                        temp_x = torch.cat([x[idx, :, x_shift:], zero_padding], dim=-1)
                    x[idx] = temp_x + noise
                else:  # valid
                    x[idx] = x[idx] + noise
                x[idx] = torch.clamp(x[idx], -1.0, 1.0)

        x = self.feature(x)
        if self.specaug:
            for i in range(x.shape[0]):
                x[i] = spec_augment(
                    x[i],
                    self.frequency_masking_para,
                    self.time_masking_para,
                    self.frequency_mask_num,
                    self.time_mask_num,
                )
        return x


class LogMel:
    def __init__(
        self, device, sample_rate=SR, hop_length=160, win_length=480, n_fft=512, n_mels=40
    ):
        self.mel = MelSpectrogram(
            sample_rate=sample_rate,
            hop_length=hop_length,
            n_fft=n_fft,
            win_length=win_length,
            n_mels=n_mels,
        )
        self.device = device

    def __call__(self, x):
        self.mel = self.mel.to(self.device)
        output = (self.mel(x) + 1e-6).log()
        return output


def build_preprocessors(noise, device, tau):
    specaugment = tau >= 1.5
    frequency_masking_para = {1: 0, 1.5: 1, 2: 3, 3: 5, 6: 7, 8: 7}
    preprocess_train = Preprocess(
        noise,
        device,
        specaug=specaugment,
        frequency_masking_para=frequency_masking_para[tau],
    )
    preprocess_test = Preprocess(noise, device)
    return torch.compile(preprocess_train), torch.compile(preprocess_test)


def make():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    noise = [torch.rand(1, SR + 800, generator=g) * 2 - 1, torch.rand(1, SR + 300, generator=g) * 2 - 1]
    preprocess_train = Preprocess(noise, torch.device("cpu"), specaug=True,
                                  frequency_masking_para=3)
    inputs = torch.rand(3, 1, SR) * 0.5 - 0.25
    labels = torch.tensor([0, 4, 11])
    silence = torch.tensor([0, 0, 0])
    return preprocess_train, [
        (inputs.clone(), labels, True),
        (inputs.clone(), silence, True, 0.8, False),
        (inputs.clone(), labels, False),
    ]
