"""torchaudio compute_deltas: win_length ValueError, replicate padding and a grouped conv1d kernel from arange (no break).

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/functional.py:961-1012
Kept: compute_deltas verbatim and the ComputeDeltas transform; used to stack
MFCC-like features with their deltas and delta-deltas.
Simplified: features 2x4x6.
"""
import torch
from torch import Tensor


def compute_deltas(specgram: Tensor, win_length: int = 5, mode: str = "replicate") -> Tensor:
    device = specgram.device
    dtype = specgram.dtype
    shape = specgram.size()
    specgram = specgram.reshape(1, -1, shape[-1])
    if win_length < 3:
        raise ValueError(f"Window length should be greater than or equal to 3. Found win_length {win_length}")
    n = (win_length - 1) // 2
    denom = n * (n + 1) * (2 * n + 1) / 3
    specgram = torch.nn.functional.pad(specgram, (n, n), mode=mode)
    kernel = torch.arange(-n, n + 1, 1, device=device, dtype=dtype).repeat(specgram.shape[1], 1, 1)
    output = torch.nn.functional.conv1d(specgram, kernel, groups=specgram.shape[1]) / denom
    output = output.reshape(shape)
    return output


class ComputeDeltas(torch.nn.Module):
    def __init__(self, win_length: int = 5, mode: str = "replicate") -> None:
        super().__init__()
        self.win_length = win_length
        self.mode = mode

    def forward(self, specgram: Tensor) -> Tensor:
        return compute_deltas(specgram, win_length=self.win_length, mode=self.mode)


deltas = ComputeDeltas()


@torch.compile(dynamic=False)
def with_deltas(mfcc):
    d1 = deltas(mfcc)
    d2 = deltas(d1)
    return torch.cat([mfcc, d1, d2], dim=-2)


def make():
    torch.manual_seed(0)
    return with_deltas._torchdynamo_orig_callable, [(torch.randn(2, 4, 6),)]
