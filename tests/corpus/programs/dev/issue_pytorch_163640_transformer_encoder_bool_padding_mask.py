"""nn.TransformerEncoder (eval) called with a boolean src_key_padding_mask, then a Linear head.

Source: pytorch/pytorch#163640 (https://github.com/pytorch/pytorch/issues/163640)
Kept: TinyEnc verbatim (TransformerEncoderLayer batch_first, dropout 0.1, TransformerEncoder,
`mask=None, src_key_padding_mask=pad_mask`, projection), `.eval()`, and
`torch.compile(m, fullgraph=True)` inside main().
Simplified: d_model 512 -> 16, nhead 8 -> 2, T 41 -> 9; the rest of the reporter's main() (cut off in
the thread) is not reproduced; a second, left-aligned padding mask is added.
"""
import torch
import torch.nn as nn


class TinyEnc(nn.Module):
    def __init__(self, d_model=16, nhead=2, num_layers=1):
        super().__init__()
        layer = nn.TransformerEncoderLayer(
            d_model=d_model, nhead=nhead, batch_first=True, dropout=0.1
        )
        self.enc = nn.TransformerEncoder(layer, num_layers=num_layers)
        self.proj = nn.Linear(d_model, 10)

    def forward(self, x, pad_mask):
        # Passing src_key_padding_mask triggers torch._nested_tensor_from_mask_left_aligned
        y = self.enc(x, mask=None, src_key_padding_mask=pad_mask)
        return self.proj(y)


def main():
    torch.manual_seed(0)
    m = TinyEnc().eval()

    B, T, C = 1, 9, 16
    x = torch.randn(B, T, C, dtype=torch.float32)
    pad_mask = (torch.rand(B, T) > 0.5)
    out_eager = m(x, pad_mask)
    cm = torch.compile(m, fullgraph=True)
    return out_eager, cm(x, pad_mask)


def make():
    torch.manual_seed(0)
    B, T, C = 1, 9, 16
    x = torch.randn(B, T, C, dtype=torch.float32)
    pad_mask = (torch.rand(B, T) > 0.5)
    left = torch.zeros(2, T, dtype=torch.bool)
    left[1, 6:] = True
    return TinyEnc().eval(), [(x, pad_mask), (torch.randn(2, T, C), left)]
