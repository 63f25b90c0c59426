"""torchaudio preemphasis + spectral_centroid feature: clone and in-place slice update, magnitude spectrogram, frequency-weighted mean (no break).

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/functional.py:1257-1299,2426-2448
Kept: preemphasis (clone, `waveform[..., 1:] -= coeff * waveform[..., :-1]`),
spectral_centroid (spectrogram with power 1, linspace over frequency bins,
the weighted sum over the frequency dim), chained in a small feature module.
Simplified: spectrogram is torch.stft magnitude; n_fft 8, hop 4.
"""
import torch


def preemphasis(waveform, coeff: float = 0.97) -> torch.Tensor:
    waveform = waveform.clone()
    waveform[..., 1:] -= coeff * waveform[..., :-1]
    return waveform


def spectrogram(waveform, pad, window, n_fft, hop_length, win_length, power, normalized):
    if pad > 0:
        waveform = torch.nn.functional.pad(waveform, (pad, pad), "constant")
    spec_f = torch.stft(waveform, n_fft=n_fft, hop_length=hop_length, win_length=win_length, window=window, center=True, return_complex=True)
    if normalized:
        spec_f /= window.pow(2.0).sum().sqrt()
    return spec_f.abs() if power == 1.0 else spec_f.abs().pow(power)


def spectral_centroid(waveform, sample_rate: int, pad: int, window, n_fft: int, hop_length: int, win_length: int):
    specgram = spectrogram(waveform, pad=pad, window=window, n_fft=n_fft, hop_length=hop_length, win_length=win_length, power=1.0, normalized=False)
    freqs = torch.linspace(0, sample_rate // 2, steps=1 + n_fft // 2, device=specgram.device).reshape((-1, 1))
    freq_dim = -2
    return (freqs * specgram).sum(dim=freq_dim) / specgram.sum(dim=freq_dim)


class Features(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(8))

    def forward(self, waveform):
        return spectral_centroid(preemphasis(waveform), 8000, 0, self.window, 8, 4, 8)


features = torch.compile(Features())


def make():
    torch.manual_seed(0)
    return Features(), [(torch.randn(2, 32),)]
