"""Vocos IMDCTSymExpHead: a Linear head, `symexp`, a clip safeguard and an IMDCT built from complex twiddle buffers stored with `view_as_real` (no break expected).

Source: gemelo-ai/vocos@19f7bfb6acdd5d3579735a086fa5c2e76b9cc231:vocos/heads.py:67-113
Also: vocos/spectral_ops.py@f913b35702ef8072b516dcb50cc7c4dd0df29b4d:125-182 (IMDCT),
vocos/modules.py (symexp).
Kept: IMDCT.__init__/forward and IMDCTSymExpHead.forward verbatim, including the
`clip_audio` branch (which clips `x`, as upstream does) and the padding dispatch.
Simplified: scipy.signal.windows.cosine is written out with numpy (same
formula); the optional mel-scale init of the last layer is dropped;
frame_len 8, dim 6.
"""
from typing import Optional

import numpy as np
import torch
from torch import nn, view_as_real, view_as_complex


def symexp(x: torch.Tensor) -> torch.Tensor:
    return torch.sign(x) * (torch.exp(x.abs()) - 1)


def cosine_window(M):
    return np.sin(np.pi / M * (np.arange(M) + 0.5))


class IMDCT(nn.Module):
    def __init__(self, frame_len: int, padding: str = "same"):
        super().__init__()
        if padding not in ["center", "same"]:
            raise ValueError("Padding must be 'center' or 'same'.")
        self.padding = padding
        self.frame_len = frame_len
        N = frame_len // 2
        n0 = (N + 1) / 2
        window = torch.from_numpy(cosine_window(frame_len)).float()
        self.register_buffer("window", window)

        pre_twiddle = torch.exp(1j * torch.pi * n0 * torch.arange(N * 2) / N)
        post_twiddle = torch.exp(1j * torch.pi * (torch.arange(N * 2) + n0) / (N * 2))
        self.register_buffer("pre_twiddle", view_as_real(pre_twiddle))
        self.register_buffer("post_twiddle", view_as_real(post_twiddle))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        B, L, N = X.shape
        Y = torch.zeros((B, L, N * 2), dtype=X.dtype, device=X.device)
        Y[..., :N] = X
        Y[..., N:] = -1 * torch.conj(torch.flip(X, dims=(-1,)))
        y = torch.fft.ifft(Y * view_as_complex(self.pre_twiddle).expand(Y.shape), dim=-1)
        y = torch.real(y * view_as_complex(self.post_twiddle).expand(y.shape)) * np.sqrt(N) * np.sqrt(2)
        result = y * self.window.expand(y.shape)
        output_size = (1, (L + 1) * N)
        audio = torch.nn.functional.fold(
            result.transpose(1, 2),
            output_size=output_size,
            kernel_size=(1, self.frame_len),
            stride=(1, self.frame_len // 2),
        )[:, 0, 0, :]

        if self.padding == "center":
            pad = self.frame_len // 2
        elif self.padding == "same":
            pad = self.frame_len // 4
        else:
            raise ValueError("Padding must be 'center' or 'same'.")

        audio = audio[:, pad:-pad]
        return audio


class FourierHead(nn.Module):
    """Base class for inverse fourier modules."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError("Subclasses must implement the forward method.")


class IMDCTSymExpHead(FourierHead):
    def __init__(
        self,
        dim: int,
        mdct_frame_len: int,
        padding: str = "same",
        sample_rate: Optional[int] = None,
        clip_audio: bool = False,
    ):
        super().__init__()
        out_dim = mdct_frame_len // 2
        self.out = nn.Linear(dim, out_dim)
        self.imdct = IMDCT(frame_len=mdct_frame_len, padding=padding)
        self.clip_audio = clip_audio

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.out(x)
        x = symexp(x)
        x = torch.clip(x, min=-1e2, max=1e2)  # safeguard to prevent excessively large magnitudes
        audio = self.imdct(x)
        if self.clip_audio:
            audio = torch.clip(x, min=-1.0, max=1.0)

        return audio


head = torch.compile(IMDCTSymExpHead(dim=6, mdct_frame_len=8, padding="center"))


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 6)
    return IMDCTSymExpHead(dim=6, mdct_frame_len=8, padding="center"), [(x,), (x[:1, :3],)]
