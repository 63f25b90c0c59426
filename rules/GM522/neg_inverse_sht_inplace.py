"""GM522 fixed by hand: the imaginary part is cleared in place on its view (traced, no break).

torch-harmonics' `InverseRealSHT` writes `x[..., 0].imag = 0.0` before `irfft`.
"""
import torch
from torch import nn


class InverseRealSHT(nn.Module):
    def forward(self, xs: torch.Tensor) -> torch.Tensor:
        x = torch.view_as_complex(xs)
        x[..., 0].imag.zero_()
        return torch.fft.irfft(x, n=8, dim=-1, norm="forward")


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return InverseRealSHT(), [(torch.randn(2, 5, 2),)]


compiled = torch.compile(InverseRealSHT())

if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
