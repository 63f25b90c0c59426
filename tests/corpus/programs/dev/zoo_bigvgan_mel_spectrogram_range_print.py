"""BigVGAN mel_spectrogram: warns with `print` when `torch.min(y) < -1.0` or `torch.max(y) > 1.0`, caches mel bases and Hann windows in module dicts keyed by an f-string with the device, then reflect-pads, STFTs and log-compresses.

Source: NVIDIA/BigVGAN@169ffbe09a0e19bdb9435b480a0adf405b83251b:meldataset.py:22-118
Kept: dynamic_range_compression_torch, spectral_normalize_torch,
mel_basis_cache/hann_window_cache, mel_spectrogram and get_mel_spectrogram
verbatim (the two range checks with their f-string prints, the cache key).
Simplified: librosa.filters.mel is a numpy triangular filterbank with the
same signature; AttrDict is a small class; n_fft 32, 8 mels, hop 8.
"""
import numpy as np
import torch

MAX_WAV_VALUE = 32767.0  # NOTE: 32768.0 -1 to prevent int16 overflow (results in popping sound in corner cases)


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


def dynamic_range_compression_torch(x, C=1, clip_val=1e-5):
    return torch.log(torch.clamp(x, min=clip_val) * C)


def spectral_normalize_torch(magnitudes):
    return dynamic_range_compression_torch(magnitudes)


mel_basis_cache = {}
hann_window_cache = {}


def mel_spectrogram(
    y: torch.Tensor,
    n_fft: int,
    num_mels: int,
    sampling_rate: int,
    hop_size: int,
    win_size: int,
    fmin: int,
    fmax: int = None,
    center: bool = False,
) -> torch.Tensor:
    if torch.min(y) < -1.0:
        print(f"[WARNING] Min value of input waveform signal is {torch.min(y)}")
    if torch.max(y) > 1.0:
        print(f"[WARNING] Max value of input waveform signal is {torch.max(y)}")

    device = y.device
    key = f"{n_fft}_{num_mels}_{sampling_rate}_{hop_size}_{win_size}_{fmin}_{fmax}_{device}"

    if key not in mel_basis_cache:
        mel = librosa_mel_fn(
            sr=sampling_rate, n_fft=n_fft, n_mels=num_mels, fmin=fmin, fmax=fmax
        )
        mel_basis_cache[key] = torch.from_numpy(mel).float().to(device)
        hann_window_cache[key] = torch.hann_window(win_size).to(device)

    mel_basis = mel_basis_cache[key]
    hann_window = hann_window_cache[key]

    padding = (n_fft - hop_size) // 2
    y = torch.nn.functional.pad(
        y.unsqueeze(1), (padding, padding), mode="reflect"
    ).squeeze(1)

    spec = torch.stft(
        y,
        n_fft,
        hop_length=hop_size,
        win_length=win_size,
        window=hann_window,
        center=center,
        pad_mode="reflect",
        normalized=False,
        onesided=True,
        return_complex=True,
    )
    spec = torch.sqrt(torch.view_as_real(spec).pow(2).sum(-1) + 1e-9)

    mel_spec = torch.matmul(mel_basis, spec)
    mel_spec = spectral_normalize_torch(mel_spec)

    return mel_spec


class AttrDict(dict):
    def __init__(self, *args, **kwargs):
        super(AttrDict, self).__init__(*args, **kwargs)
        self.__dict__ = self


h = AttrDict(n_fft=32, num_mels=8, sampling_rate=8000, hop_size=8, win_size=32, fmin=0, fmax=None)


def get_mel_spectrogram(wav, h):
    return mel_spectrogram(
        wav,
        h.n_fft,
        h.num_mels,
        h.sampling_rate,
        h.hop_size,
        h.win_size,
        h.fmin,
        h.fmax,
    )


compiled_get_mel = torch.compile(get_mel_spectrogram)


def make():
    torch.manual_seed(0)
    wav = torch.rand(1, 64) * 1.8 - 0.9
    loud = wav * 1.5
    return get_mel_spectrogram, [(wav, h), (loud, h)]
