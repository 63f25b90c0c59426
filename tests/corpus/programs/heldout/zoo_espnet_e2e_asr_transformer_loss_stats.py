"""ESPnet E2E ASR Transformer forward: `xs_pad[:, :max(ilens)]`, `make_pad_mask(ilens.tolist())`, `y[y != ignore_id]` target parsing, the label-smoothing loss's `ignore.sum().item()`, `th_accuracy`'s `float()`s and the `float(self.loss)` report.

Source: espnet/espnet@5e92616233a860bd01ca3f1eb38839bf83a4c478:espnet/nets/pytorch_backend/e2e_asr_transformer.py:150-240
Also: espnet/nets/pytorch_backend/nets_utils.py@00e575331cdbcd53f47a2e2c0419a1bb43c2bc8f
(pad_list, make_pad_mask, th_accuracy),
espnet/nets/pytorch_backend/transformer/label_smoothing_loss.py@2f0785c9
(LabelSmoothingLoss), espnet/nets/pytorch_backend/transformer/mask.py
(subsequent_mask).
Kept: add_sos_eos, target_mask and forward as written with mtlalpha 0 (no
CTC), the loss-threshold report/`logging.warning` branch; the helpers named
above as written.
Simplified: the encoder and decoder are one-layer stand-ins with the same
call signatures (mask in, mask out); the chainer Reporter keeps the last
values; idim 4, adim 8, odim 6.
"""
import logging
import math

import torch
from torch import nn

CTC_LOSS_THRESHOLD = 10000


def pad_list(xs, pad_value):
    n_batch = len(xs)
    max_len = max(x.size(0) for x in xs)
    pad = xs[0].new(n_batch, max_len, *xs[0].size()[1:]).fill_(pad_value)

    for i in range(n_batch):
        pad[i, :xs[i].size(0)] = xs[i]

    return pad


def make_pad_mask(lengths, xs=None, length_dim=-1):
    if length_dim == 0:
        raise ValueError('length_dim cannot be 0: {}'.format(length_dim))

    if not isinstance(lengths, list):
        lengths = lengths.tolist()
    bs = int(len(lengths))
    if xs is None:
        maxlen = int(max(lengths))
    else:
        maxlen = xs.size(length_dim)

    seq_range = torch.arange(0, maxlen, dtype=torch.int64)
    seq_range_expand = seq_range.unsqueeze(0).expand(bs, maxlen)
    seq_length_expand = seq_range_expand.new(lengths).unsqueeze(-1)
    mask = seq_range_expand >= seq_length_expand

    if xs is not None:
        assert xs.size(0) == bs, (xs.size(0), bs)

        if length_dim < 0:
            length_dim = xs.dim() + length_dim
        # ind = (:, None, ..., None, :, , None, ..., None)
        ind = tuple(slice(None) if i in (0, length_dim) else None
                    for i in range(xs.dim()))
        mask = mask[ind].expand_as(xs).to(xs.device)
    return mask


def th_accuracy(pad_outputs, pad_targets, ignore_label):
    pad_pred = pad_outputs.view(
        pad_targets.size(0),
        pad_targets.size(1),
        pad_outputs.size(1)).argmax(2)
    mask = pad_targets != ignore_label
    numerator = torch.sum(pad_pred.masked_select(mask) == pad_targets.masked_select(mask))
    denominator = torch.sum(mask)
    return float(numerator) / float(denominator)


def subsequent_mask(size, device="cpu", dtype=torch.uint8):
    ret = torch.ones(size, size, device=device, dtype=dtype)
    return torch.tril(ret, out=ret)


class LabelSmoothingLoss(nn.Module):
    def __init__(self, size, padding_idx, smoothing, normalize_length=False, criterion=nn.KLDivLoss(reduction="none")):
        super(LabelSmoothingLoss, self).__init__()
        self.criterion = criterion
        self.padding_idx = padding_idx
        self.confidence = 1.0 - smoothing
        self.smoothing = smoothing
        self.size = size
        self.true_dist = None
        self.normalize_length = normalize_length

    def forward(self, x, target):
        assert x.size(2) == self.size
        batch_size = x.size(0)
        x = x.view(-1, self.size)
        target = target.view(-1)
        with torch.no_grad():
            true_dist = x.clone()
            true_dist.fill_(self.smoothing / (self.size - 1))
            ignore = target == self.padding_idx  # (B,)
            total = len(target) - ignore.sum().item()
            target = target.masked_fill(ignore, 0)  # avoid -1 index
            true_dist.scatter_(1, target.unsqueeze(1), self.confidence)
        kl = self.criterion(torch.log_softmax(x, dim=1), true_dist)
        denom = total if self.normalize_length else batch_size
        return kl.masked_fill(ignore.unsqueeze(1), 0).sum() / denom


class Encoder(nn.Module):
    def __init__(self, idim, adim):
        super().__init__()
        self.embed = nn.Linear(idim, adim)
        self.attn = nn.MultiheadAttention(adim, 2, batch_first=True)
        self.norm = nn.LayerNorm(adim)

    def forward(self, xs, masks):
        xs = self.embed(xs)
        attn, _ = self.attn(xs, xs, xs, key_padding_mask=~masks[:, 0])
        return self.norm(xs + attn), masks


class Decoder(nn.Module):
    def __init__(self, odim, adim):
        super().__init__()
        self.embed = nn.Embedding(odim, adim)
        self.src_attn = nn.MultiheadAttention(adim, 2, batch_first=True)
        self.output_layer = nn.Linear(adim, odim)

    def forward(self, tgt, tgt_mask, memory, memory_mask):
        x = self.embed(tgt)
        attn, _ = self.src_attn(x, memory, memory, key_padding_mask=~memory_mask[:, 0])
        return self.output_layer(x + attn), tgt_mask


class Reporter:
    def report(self, loss_ctc, loss_att, acc, cer_ctc, cer, wer, mtl_loss):
        self.last = dict(loss_ctc=loss_ctc, loss_att=loss_att, acc=acc, cer=cer, wer=wer, loss=mtl_loss)


class E2E(nn.Module):
    def __init__(self, idim=4, odim=6, adim=8, mtlalpha=0.0, lsm_weight=0.1):
        super().__init__()
        self.encoder = Encoder(idim, adim)
        self.decoder = Decoder(odim, adim)
        self.sos = odim - 1
        self.eos = odim - 1
        self.odim = odim
        self.adim = adim
        self.ignore_id = -1
        self.mtlalpha = mtlalpha
        self.error_calculator = None
        self.reporter = Reporter()
        self.criterion = LabelSmoothingLoss(self.odim, self.ignore_id, lsm_weight, False)

    def add_sos_eos(self, ys_pad):
        eos = ys_pad.new([self.eos])
        sos = ys_pad.new([self.sos])
        ys = [y[y != self.ignore_id] for y in ys_pad]  # parse padded ys
        ys_in = [torch.cat([sos, y], dim=0) for y in ys]
        ys_out = [torch.cat([y, eos], dim=0) for y in ys]
        return pad_list(ys_in, self.eos), pad_list(ys_out, self.ignore_id)

    def target_mask(self, ys_in_pad):
        ys_mask = ys_in_pad != self.ignore_id
        m = subsequent_mask(ys_mask.size(-1), device=ys_mask.device).unsqueeze(0)
        return ys_mask.unsqueeze(-2) & m

    def forward(self, xs_pad, ilens, ys_pad):
        # forward encoder
        xs_pad = xs_pad[:, :max(ilens)]  # for data parallel
        src_mask = (~make_pad_mask(ilens.tolist())).to(xs_pad.device).unsqueeze(-2)
        hs_pad, hs_mask = self.encoder(xs_pad, src_mask)
        self.hs_pad = hs_pad

        # forward decoder
        ys_in_pad, ys_out_pad = self.add_sos_eos(ys_pad)
        ys_mask = self.target_mask(ys_in_pad)
        pred_pad, pred_mask = self.decoder(ys_in_pad, ys_mask, hs_pad, hs_mask)
        self.pred_pad = pred_pad

        # compute loss
        loss_att = self.criterion(pred_pad, ys_out_pad)
        self.acc = th_accuracy(pred_pad.view(-1, self.odim), ys_out_pad,
                               ignore_label=self.ignore_id)

        if self.mtlalpha == 0.0:
            loss_ctc = None
            cer_ctc = None

        # 5. compute cer/wer
        if self.training or self.error_calculator is None:
            cer, wer = 0.0, 0.0

        # copyied from e2e_asr
        alpha = self.mtlalpha
        if alpha == 0:
            self.loss = loss_att
            loss_att_data = float(loss_att)
            loss_ctc_data = None

        loss_data = float(self.loss)
        if loss_data < CTC_LOSS_THRESHOLD and not math.isnan(loss_data):
            self.reporter.report(loss_ctc_data, loss_att_data, self.acc, cer_ctc, cer, wer, loss_data)
        else:
            logging.warning('loss (=%f) is not correct', loss_data)
        return self.loss


def train(model, batches):
    model = torch.compile(model)
    optimizer = torch.optim.Adam(model.parameters())
    for xs_pad, ilens, ys_pad in batches:
        loss = model(xs_pad, ilens, ys_pad)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def make():
    torch.manual_seed(0)
    model = E2E()
    xs_pad = torch.randn(2, 7, 4)
    ilens = torch.tensor([7, 5])
    ys_pad = torch.tensor([[1, 2, 3, 4], [2, 3, -1, -1]])
    bad = torch.full((1, 4, 4), float("nan"))
    return model, [
        (xs_pad, ilens, ys_pad),
        (xs_pad[:1, :5], torch.tensor([5]), ys_pad[1:]),
        (bad, torch.tensor([4]), ys_pad[:1]),
    ]
