"""Vocos ISTFTHead: predicted log-magnitude and phase become a complex spectrogram `mag * torch.exp(phase * 1j)`, and the custom ISTFT with "same" padding overlap-adds through `fold`, checks `assert (window_envelope > 1e-11).all()` and normalises; "center" padding falls back to `torch.istft`.

Source: gemelo-ai/vocos@19f7bfb6acdd5d3579735a086fa5c2e76b9cc231:vocos/heads.py:24-64
Also: vocos/spectral_ops.py@f913b35702ef8072b516dcb50cc7c4dd0df29b4d:7-73 (ISTFT).
Kept: ISTFT.__init__/forward and ISTFTHead.forward verbatim (padding dispatch,
irfft, fold overlap-add, window envelope assert, clip safeguard, atan2 phase).
Simplified: the ConvNeXt backbone of Vocos.decode is one Linear layer;
n_fft 16, hop 4, dim 8.
"""
import torch
from torch import nn


class ISTFT(nn.Module):
    def __init__(self, n_fft: int, hop_length: int, win_length: int, padding: str = "same"):
        super().__init__()
        if padding not in ["center", "same"]:
            raise ValueError("Padding must be 'center' or 'same'.")
        self.padding = padding
        self.n_fft = n_fft
        self.hop_length = hop_length
        self.win_length = win_length
        window = torch.hann_window(win_length)
        self.register_buffer("window", window)

    def forward(self, spec: torch.Tensor) -> torch.Tensor:
        if self.padding == "center":
            # Fallback to pytorch native implementation
            return torch.istft(spec, self.n_fft, self.hop_length, self.win_length, self.window, center=True)
        elif self.padding == "same":
            pad = (self.win_length - self.hop_length) // 2
        else:
            raise ValueError("Padding must be 'center' or 'same'.")

        assert spec.dim() == 3, "Expected a 3D tensor as input"
        B, N, T = spec.shape

        # Inverse FFT
        ifft = torch.fft.irfft(spec, self.n_fft, dim=1, norm="backward")
        ifft = ifft * self.window[None, :, None]

        # Overlap and Add
        output_size = (T - 1) * self.hop_length + self.win_length
        y = torch.nn.functional.fold(
            ifft, output_size=(1, output_size), kernel_size=(1, self.win_length), stride=(1, self.hop_length),
        )[:, 0, 0, pad:-pad]

        # Window envelope
        window_sq = self.window.square().expand(1, T, -1).transpose(1, 2)
        window_envelope = torch.nn.functional.fold(
            window_sq, output_size=(1, output_size), kernel_size=(1, self.win_length), stride=(1, self.hop_length),
        ).squeeze()[pad:-pad]

        # Normalize
        assert (window_envelope > 1e-11).all()
        y = y / window_envelope

        return y


class FourierHead(nn.Module):
    """Base class for inverse fourier modules."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("Subclasses must implement the forward method.")


class ISTFTHead(FourierHead):
    def __init__(self, dim: int, n_fft: int, hop_length: int, padding: str = "same"):
        super().__init__()
        out_dim = n_fft + 2
        self.out = torch.nn.Linear(dim, out_dim)
        self.istft = ISTFT(n_fft=n_fft, hop_length=hop_length, win_length=n_fft, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.out(x).transpose(1, 2)
        mag, p = x.chunk(2, dim=1)
        mag = torch.exp(mag)
        mag = torch.clip(mag, max=1e2)  # safeguard to prevent excessively large magnitudes
        x = torch.cos(p)
        y = torch.sin(p)
        phase = torch.atan2(y, x)
        S = mag * torch.exp(phase * 1j)
        audio = self.istft(S)
        return audio


class Vocos(nn.Module):
    def __init__(self, dim=8, n_mels=6, padding="same"):
        super().__init__()
        self.backbone = nn.Linear(n_mels, dim)
        self.head = ISTFTHead(dim=dim, n_fft=16, hop_length=4, padding=padding)

    @torch.inference_mode()
    def decode(self, features_input: torch.Tensor, **kwargs) -> torch.Tensor:
        x = self.backbone(features_input.transpose(1, 2), **kwargs)
        audio_output = self.head(x)
        return audio_output


def from_pretrained(padding="same"):
    vocos = Vocos(padding=padding).eval()
    vocos.decode = torch.compile(vocos.decode)
    return vocos


def make():
    torch.manual_seed(0)
    vocos = Vocos().eval()
    mel = torch.randn(2, 6, 7)
    return vocos.decode, [(mel,), (mel[:1, :, :5],)]
