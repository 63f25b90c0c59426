"""sota-music-tagging-models ShortChunkCNN_Res in evaluation: mel front-end, seven strided Res_2d blocks (`if self.diff` projection), then global max pooling only `if x.size(-1) != 1`, with `nn.MaxPool1d(x.size(-1))` and `nn.Sigmoid()` built inside forward.

Source: minzwon/sota-music-tagging-models@3abe8be7e0620235edfd6f14a1175337c3775e0c:training/model.py (ShortChunkCNN_Res)
Also: training/modules.py (Res_2d) at 1676bf3ecbf5a8082030bfd38e91f11b87c5ffe6; training/eval.py
runs the model in eval mode over fixed-length chunks.
Kept: Res_2d and ShortChunkCNN_Res verbatim (constructor defaults, the size branch).
Simplified: torchaudio.transforms.MelSpectrogram / AmplitudeToDB are small stand-ins written with
torch.stft, an HTK triangular filterbank buffer and `10 * log10(clamp(x, min=1e-10))` (the
torchaudio defaults: hann window, hop n_fft // 2, power 2, top_db None); n_channels 128 -> 4,
n_class 10; chunks of 128 and 130 frames.
"""
import math

import torch
import torch.nn as nn


class MelSpectrogram(nn.Module):
    """Stand-in for torchaudio.transforms.MelSpectrogram (center=True, reflect pad, power 2, HTK mels)."""

    def __init__(self, sample_rate=16000, n_fft=400, f_min=0.0, f_max=None, n_mels=128):
        super().__init__()
        self.n_fft = n_fft
        self.hop_length = n_fft // 2
        self.register_buffer("window", torch.hann_window(n_fft))
        f_max = f_max if f_max is not None else float(sample_rate // 2)
        n_freqs = n_fft // 2 + 1
        all_freqs = torch.linspace(0, sample_rate // 2, n_freqs)
        m_min = 2595.0 * math.log10(1.0 + f_min / 700.0)
        m_max = 2595.0 * math.log10(1.0 + f_max / 700.0)
        m_pts = torch.linspace(m_min, m_max, n_mels + 2)
        f_pts = 700.0 * (10 ** (m_pts / 2595.0) - 1.0)
        f_diff = f_pts[1:] - f_pts[:-1]
        slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)
        down_slopes = (-1.0 * slopes[:, :-2]) / f_diff[:-1]
        up_slopes = slopes[:, 2:] / f_diff[1:]
        fb = torch.clamp(torch.min(down_slopes, up_slopes), min=0.0)
        self.register_buffer("fb", fb)

    def forward(self, waveform):
        spec = torch.stft(waveform, self.n_fft, hop_length=self.hop_length, win_length=self.n_fft,
                          window=self.window, center=True, pad_mode="reflect", normalized=False,
                          onesided=True, return_complex=True)
        spec = spec.abs().pow(2.0)
        return torch.matmul(spec.transpose(-1, -2), self.fb).transpose(-1, -2)


class AmplitudeToDB(nn.Module):
    """Stand-in for torchaudio.transforms.AmplitudeToDB() (stype power, top_db None)."""

    def __init__(self):
        super().__init__()
        self.multiplier = 10.0
        self.amin = 1e-10
        self.db_multiplier = math.log10(max(self.amin, 1.0))

    def forward(self, x):
        x_db = self.multiplier * torch.log10(torch.clamp(x, min=self.amin))
        x_db -= self.multiplier * self.db_multiplier
        return x_db


class Res_2d(nn.Module):
    def __init__(self, input_channels, output_channels, shape=3, stride=2):
        super(Res_2d, self).__init__()
        # convolution
        self.conv_1 = nn.Conv2d(input_channels, output_channels, shape, stride=stride, padding=shape//2)
        self.bn_1 = nn.BatchNorm2d(output_channels)
        self.conv_2 = nn.Conv2d(output_channels, output_channels, shape, padding=shape//2)
        self.bn_2 = nn.BatchNorm2d(output_channels)

        # residual
        self.diff = False
        if (stride != 1) or (input_channels != output_channels):
            self.conv_3 = nn.Conv2d(input_channels, output_channels, shape, stride=stride, padding=shape//2)
            self.bn_3 = nn.BatchNorm2d(output_channels)
            self.diff = True
        self.relu = nn.ReLU()

    def forward(self, x):
        # convolution
        out = self.bn_2(self.conv_2(self.relu(self.bn_1(self.conv_1(x)))))

        # residual
        if self.diff:
            x = self.bn_3(self.conv_3(x))
        out = x + out
        out = self.relu(out)
        return out


class ShortChunkCNN_Res(nn.Module):
    '''
    Short-chunk CNN architecture with residual connections.
    '''
    def __init__(self,
                n_channels=128,
                sample_rate=16000,
                n_fft=512,
                f_min=0.0,
                f_max=8000.0,
                n_mels=128,
                n_class=50):
        super(ShortChunkCNN_Res, self).__init__()

        # Spectrogram
        self.spec = MelSpectrogram(sample_rate=sample_rate,
                                   n_fft=n_fft,
                                   f_min=f_min,
                                   f_max=f_max,
                                   n_mels=n_mels)
        self.to_db = AmplitudeToDB()
        self.spec_bn = nn.BatchNorm2d(1)

        # CNN
        self.layer1 = Res_2d(1, n_channels, stride=2)
        self.layer2 = Res_2d(n_channels, n_channels, stride=2)
        self.layer3 = Res_2d(n_channels, n_channels*2, stride=2)
        self.layer4 = Res_2d(n_channels*2, n_channels*2, stride=2)
        self.layer5 = Res_2d(n_channels*2, n_channels*2, stride=2)
        self.layer6 = Res_2d(n_channels*2, n_channels*2, stride=2)
        self.layer7 = Res_2d(n_channels*2, n_channels*4, stride=2)

        # Dense
        self.dense1 = nn.Linear(n_channels*4, n_channels*4)
        self.bn = nn.BatchNorm1d(n_channels*4)
        self.dense2 = nn.Linear(n_channels*4, n_class)
        self.dropout = nn.Dropout(0.5)
        self.relu = nn.ReLU()

    def forward(self, x):
        # Spectrogram
        x = self.spec(x)
        x = self.to_db(x)
        x = x.unsqueeze(1)
        x = self.spec_bn(x)

        # CNN
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.layer5(x)
        x = self.layer6(x)
        x = self.layer7(x)
        x = x.squeeze(2)

        # Global Max Pooling
        if x.size(-1) != 1:
            x = nn.MaxPool1d(x.size(-1))(x)
        x = x.squeeze(2)

        # Dense
        x = self.dense1(x)
        x = self.bn(x)
        x = self.relu(x)
        x = self.dropout(x)
        x = self.dense2(x)
        x = nn.Sigmoid()(x)

        return x


def get_model():
    return ShortChunkCNN_Res(n_channels=4, n_class=10)


def evaluate_setup():
    model = get_model()
    return torch.compile(model.eval())


def make():
    torch.manual_seed(0)
    short = torch.randn(2, 127 * 256) * 0.1   # 128 frames -> time axis 1 after layer7
    longer = torch.randn(2, 129 * 256) * 0.1  # 130 frames -> time axis 2: max pooling taken
    return get_model().eval(), [(short,), (longer,)]
