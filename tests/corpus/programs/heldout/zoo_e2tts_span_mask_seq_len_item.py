"""E2-TTS training step: a random infilling span from `mask_from_frac_lengths` (whose helper reads `seq_len.max().item()`), and the flow loss read through `loss[rand_span_mask]`.

Source: lucidrains/e2-tts-pytorch@1028716e6a4072f668716687d732a3b123dda4cf:e2_tts_pytorch/e2_tts.py:173-235
Also: e2_tts.py:1469-1582 (E2TTS.forward: lens/mask, frac_lengths, rand_span_mask &= mask,
x0/x1/w flow interpolation, einx.where conditioning, `loss[rand_span_mask].mean()`).
Kept: lens_to_mask, mask_from_start_end_indices, mask_from_frac_lengths and pad_to_length
verbatim; E2TTS.forward's mask/flow/loss path.
Simplified: einx written as broadcasting comparisons and torch.where; the transformer with
prediction head is one Linear over [w, cond]; no text, no velocity-consistency loss;
`lens` is positional (keyword-only in the original) so input sets can pass it.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn, Tensor
from torch.nn import Module, Linear


def exists(v):
    return v is not None


def lens_to_mask(
    t,
    length: int | None = None
):

    if not exists(length):
        length = t.amax()

    seq = torch.arange(length, device = t.device)
    return seq[None, :] < t[:, None]


def mask_from_start_end_indices(
    seq_len,
    start,
    end
):
    max_seq_len = seq_len.max().item()
    seq = torch.arange(max_seq_len, device = start.device).long()
    return (seq[None, :] >= start[:, None]) & (seq[None, :] < end[:, None])


def mask_from_frac_lengths(
    seq_len,
    frac_lengths,
    max_length: int | None = None
):
    lengths = (frac_lengths * seq_len).long()
    max_start = seq_len - lengths

    rand = torch.rand_like(frac_lengths)
    start = (max_start * rand).long().clamp(min = 0)
    end = start + lengths

    out = mask_from_start_end_indices(seq_len, start, end)

    if exists(max_length):
        out = pad_to_length(out, max_length)

    return out


def pad_to_length(
    t: Tensor,
    length: int,
    value = None
):
    seq_len = t.shape[-1]
    if length > seq_len:
        t = F.pad(t, (0, length - seq_len), value = value)

    return t[..., :length]


class E2TTS(Module):
    def __init__(self, num_channels = 6, frac_lengths_mask = (0.7, 1.)):
        super().__init__()
        self.num_channels = num_channels
        self.frac_lengths_mask = frac_lengths_mask
        self.to_pred = Linear(num_channels * 2, num_channels)

    @property
    def device(self):
        return next(self.parameters()).device

    def transformer_with_pred_head(self, w, cond, *, times, mask = None):
        pred = self.to_pred(torch.cat((w, cond), dim = -1))
        return pred * times[:, None, None]

    def forward(
        self,
        inp,
        lens = None,
    ):
        batch, seq_len, dtype, device = *inp.shape[:2], inp.dtype, self.device

        # lens and mask

        if not exists(lens):
            lens = torch.full((batch,), seq_len, device = device)

        mask = lens_to_mask(lens, length = seq_len)

        # get a random span to mask out for training conditionally

        frac_lengths = torch.zeros((batch,), device = self.device).float().uniform_(*self.frac_lengths_mask)
        rand_span_mask = mask_from_frac_lengths(lens, frac_lengths, max_length = seq_len)

        if exists(mask):
            rand_span_mask &= mask

        x1 = inp
        x0 = torch.randn_like(x1)

        times = torch.rand((batch,), dtype = dtype, device = self.device)
        t = times[:, None, None]

        w = (1. - t) * x0 + t * x1

        flow = x1 - x0

        cond = torch.where(rand_span_mask[..., None], torch.zeros_like(x1), x1)

        pred = self.transformer_with_pred_head(w, cond, times = times, mask = mask)

        loss = F.mse_loss(pred, flow, reduction = 'none')

        loss = loss[rand_span_mask].mean()

        return loss


def train_step(model, inp, lens = None):
    compiled = torch.compile(model)
    return compiled(inp, lens)


def make():
    torch.manual_seed(0)
    inp = torch.randn(2, 8, 6)
    lens = torch.tensor([6, 4])
    return E2TTS(), [(inp,), (inp, torch.tensor([8, 8])), (inp, lens)]
