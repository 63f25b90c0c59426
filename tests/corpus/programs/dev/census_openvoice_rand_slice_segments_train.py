"""OpenVoice (VITS) training: `rand_slice_segments` picks random start indices and `slice_segments` slices
`x[i, :, idx_str:idx_end]` with 0-d tensor bounds in a Python loop.

Source: myshell-ai/OpenVoice@858b29cd:openvoice/commons.py (slice_segments, rand_slice_segments) and
openvoice/models.py (SynthesizerTrn.forward: `z_slice, ids_slice = commons.rand_slice_segments(z, y_lengths,
self.segment_size)`)
Census: penguinwu/oss-model-graph-break-corpus corpora/custom-models README: GPT-SoVITS-SynthesizerTrn forward (train),
"Tensor.item(), rand_slice_segments" (GPT-SoVITS uses the same VITS commons).
Kept: both helpers verbatim and the training forward's slice + decoder call.
Simplified: the posterior encoder and HiFi-GAN decoder are single convs.
"""
import torch
from torch import nn


def slice_segments(x, ids_str, segment_size=4):
    ret = torch.zeros_like(x[:, :, :segment_size])
    for i in range(x.size(0)):
        idx_str = ids_str[i]
        idx_end = idx_str + segment_size
        ret[i] = x[i, :, idx_str:idx_end]
    return ret


def rand_slice_segments(x, x_lengths=None, segment_size=4):
    b, d, t = x.size()
    if x_lengths is None:
        x_lengths = t
    ids_str_max = x_lengths - segment_size + 1
    ids_str = (torch.rand([b]).to(device=x.device) * ids_str_max).to(dtype=torch.long)
    ret = slice_segments(x, ids_str, segment_size)
    return ret, ids_str


class SynthesizerTrn(nn.Module):
    def __init__(self, channels=3, segment_size=4):
        super().__init__()
        self.segment_size = segment_size
        self.enc_q = nn.Conv1d(channels, 2, 1)
        self.dec = nn.Conv1d(2, 1, 3, padding=1)

    def forward(self, y, y_lengths):
        z = self.enc_q(y)
        z_slice, ids_slice = rand_slice_segments(z, y_lengths, self.segment_size)
        o = self.dec(z_slice)
        return o, ids_slice


def train_step(net_g, spec, spec_lengths):
    net_g.train()
    compiled = torch.compile(net_g)
    y_hat, ids_slice = compiled(spec, spec_lengths)
    y_hat.abs().mean().backward()


def make():
    torch.manual_seed(0)
    return SynthesizerTrn().train(), [(torch.randn(2, 3, 8), torch.tensor([8, 6])), (torch.randn(2, 3, 8), None)]
