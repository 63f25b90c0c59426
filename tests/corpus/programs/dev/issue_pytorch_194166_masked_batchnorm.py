"""BatchNorm applied to a boolean-masked subset and written back: `out[mask_bool] = self.norm(h[mask_bool])`.

Source: https://github.com/pytorch/pytorch/issues/194166
Kept: MaskedBN verbatim and `torch.compile(m, dynamic=True)`.
Simplified: CPU instead of CUDA, 16 rows instead of 64; no backward.
"""
import torch


class MaskedBN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.BatchNorm1d(8)

    def forward(self, h, mask_bool):
        out = h.clone()
        out[mask_bool] = self.norm(h[mask_bool])
        return out


m = MaskedBN()
f = torch.compile(m, dynamic=True)


def make():
    torch.manual_seed(0)
    h = torch.randn(16, 8)
    mask = torch.rand(16) > 0.3
    return MaskedBN(), [(h, mask)]
