"""WeNet attention loss: add_sos_eos strips padding per row with `y[y != ignore_id]`, reverse_pad_list slices by lengths, LabelSmoothingLoss counts tokens with `.item()`, th_accuracy uses masked_select.

Source: wenet-e2e/wenet@015469960db73eb19c49a48c020d5ac9db69bae5:wenet/models/transformer/asr_model.py:181-214
Also: wenet/utils/common.py:27-76,113-156,241-288 (IGNORE_ID, pad_list,
add_sos_eos, reverse_pad_list, th_accuracy),
wenet/models/transformer/label_smoothing_loss.py:54-96 (LabelSmoothingLoss).
Kept: _calc_att_loss verbatim (left-to-right and reversed targets, the
reverse_weight mix with `torch.tensor(0.0)`, th_accuracy on the flattened
decoder output), pad_list's ndim chain and per-row copy loop, the label
smoothing loss with `len(target) - ignore.sum().item()`.
Simplified: the bi-transformer decoder is an embedding + linear per
direction that returns (decoder_out, r_decoder_out, olens); the encoder
output is an argument; vocab 10 (sos = eos = 9), hidden 8.
"""
from typing import Dict, List, Optional, Tuple

import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence

IGNORE_ID = -1


def pad_list(xs: List[torch.Tensor], pad_value: int):
    max_len = max([len(item) for item in xs])
    batchs = len(xs)
    ndim = xs[0].ndim
    if ndim == 1:
        pad_res = torch.zeros(batchs,
                              max_len,
                              dtype=xs[0].dtype,
                              device=xs[0].device)
    elif ndim == 2:
        pad_res = torch.zeros(batchs,
                              max_len,
                              xs[0].shape[1],
                              dtype=xs[0].dtype,
                              device=xs[0].device)
    elif ndim == 3:
        pad_res = torch.zeros(batchs,
                              max_len,
                              xs[0].shape[1],
                              xs[0].shape[2],
                              dtype=xs[0].dtype,
                              device=xs[0].device)
    else:
        raise ValueError(f"Unsupported ndim: {ndim}")
    pad_res.fill_(pad_value)
    for i in range(batchs):
        pad_res[i, :len(xs[i])] = xs[i]
    return pad_res


def add_sos_eos(ys_pad: torch.Tensor, sos: int, eos: int,
                ignore_id: int) -> Tuple[torch.Tensor, torch.Tensor]:
    _sos = torch.tensor([sos],
                        dtype=torch.long,
                        requires_grad=False,
                        device=ys_pad.device)
    _eos = torch.tensor([eos],
                        dtype=torch.long,
                        requires_grad=False,
                        device=ys_pad.device)
    ys = [y[y != ignore_id] for y in ys_pad]  # parse padded ys
    ys_in = [torch.cat([_sos, y], dim=0) for y in ys]
    ys_out = [torch.cat([y, _eos], dim=0) for y in ys]
    return pad_list(ys_in, eos), pad_list(ys_out, ignore_id)


def reverse_pad_list(ys_pad: torch.Tensor,
                     ys_lens: torch.Tensor,
                     pad_value: float = -1.0) -> torch.Tensor:
    r_ys_pad = pad_sequence([(torch.flip(y.int()[:i], [0]))
                             for y, i in zip(ys_pad, ys_lens)], True,
                            pad_value)
    return r_ys_pad


def th_accuracy(pad_outputs: torch.Tensor, pad_targets: torch.Tensor,
                ignore_label: int) -> torch.Tensor:
    pad_pred = pad_outputs.view(pad_targets.size(0), pad_targets.size(1),
                                pad_outputs.size(1)).argmax(2)
    mask = pad_targets != ignore_label
    numerator = torch.sum(
        pad_pred.masked_select(mask) == pad_targets.masked_select(mask))
    denominator = torch.sum(mask)
    return (numerator / denominator).detach()


class LabelSmoothingLoss(nn.Module):
    def __init__(self,
                 size: int,
                 padding_idx: int,
                 smoothing: float,
                 normalize_length: bool = False):
        """Construct an LabelSmoothingLoss object."""
        super(LabelSmoothingLoss, self).__init__()
        self.criterion = nn.KLDivLoss(reduction="none")
        self.padding_idx = padding_idx
        self.confidence = 1.0 - smoothing
        self.smoothing = smoothing
        self.size = size
        self.normalize_length = normalize_length

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        assert x.size(2) == self.size
        batch_size = x.size(0)
        x = x.view(-1, self.size)
        target = target.view(-1)
        # use zeros_like instead of torch.no_grad() for true_dist,
        # since no_grad() can not be exported by JIT
        true_dist = torch.zeros_like(x)
        true_dist.fill_(self.smoothing / (self.size - 1))
        ignore = target == self.padding_idx  # (B,)
        total = len(target) - ignore.sum().item()
        target = target.masked_fill(ignore, 0)  # avoid -1 index
        true_dist.scatter_(1, target.unsqueeze(1), self.confidence)
        kl = self.criterion(torch.log_softmax(x, dim=1), true_dist)
        denom = total if self.normalize_length else batch_size
        return kl.masked_fill(ignore.unsqueeze(1), 0).sum() / denom


class TinyBiDecoder(nn.Module):
    """Stand-in for BiTransformerDecoder: same call signature and outputs."""

    def __init__(self, vocab_size: int, d_model: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.out = nn.Linear(d_model, vocab_size)
        self.r_embed = nn.Embedding(vocab_size, d_model)
        self.r_out = nn.Linear(d_model, vocab_size)

    def forward(self, memory, memory_mask, ys_in_pad, ys_in_lens, r_ys_in_pad, reverse_weight=0.0):
        ctx = (memory * memory_mask.transpose(1, 2)).sum(1, keepdim=True)
        x = self.out(self.embed(ys_in_pad) + ctx)
        r_x = torch.tensor(0.0)
        if reverse_weight > 0.0:
            r_x = self.r_out(self.r_embed(r_ys_in_pad) + ctx)
        return x, r_x, ys_in_lens


class ASRModel(nn.Module):
    def __init__(self, vocab_size: int, d_model: int, ignore_id: int = IGNORE_ID,
                 reverse_weight: float = 0.0, lsm_weight: float = 0.0,
                 length_normalized_loss: bool = False):
        super().__init__()
        # note that eos is the same as sos (equivalent ID)
        self.sos = vocab_size - 1
        self.eos = vocab_size - 1
        self.vocab_size = vocab_size
        self.ignore_id = ignore_id
        self.reverse_weight = reverse_weight
        self.decoder = TinyBiDecoder(vocab_size, d_model)
        self.criterion_att = LabelSmoothingLoss(
            size=vocab_size,
            padding_idx=ignore_id,
            smoothing=lsm_weight,
            normalize_length=length_normalized_loss,
        )

    def _calc_att_loss(
        self,
        encoder_out: torch.Tensor,
        encoder_mask: torch.Tensor,
        ys_pad: torch.Tensor,
        ys_pad_lens: torch.Tensor,
        infos: Dict[str, List[str]] = None,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        ys_in_pad, ys_out_pad = add_sos_eos(ys_pad, self.sos, self.eos,
                                            self.ignore_id)
        ys_in_lens = ys_pad_lens + 1

        # reverse the seq, used for right to left decoder
        r_ys_pad = reverse_pad_list(ys_pad, ys_pad_lens, float(self.ignore_id))
        r_ys_in_pad, r_ys_out_pad = add_sos_eos(r_ys_pad, self.sos, self.eos,
                                                self.ignore_id)
        # 1. Forward decoder
        decoder_out, r_decoder_out, _ = self.decoder(encoder_out, encoder_mask,
                                                     ys_in_pad, ys_in_lens,
                                                     r_ys_in_pad,
                                                     self.reverse_weight)
        # 2. Compute attention loss
        loss_att = self.criterion_att(decoder_out, ys_out_pad)
        r_loss_att = torch.tensor(0.0)
        if self.reverse_weight > 0.0:
            r_loss_att = self.criterion_att(r_decoder_out, r_ys_out_pad)
        loss_att = loss_att * (
            1 - self.reverse_weight) + r_loss_att * self.reverse_weight
        acc_att = th_accuracy(
            decoder_out.view(-1, self.vocab_size),
            ys_out_pad,
            ignore_label=self.ignore_id,
        )
        return loss_att, acc_att


model = ASRModel(10, 8, reverse_weight=0.3, lsm_weight=0.1)
model._calc_att_loss = torch.compile(model._calc_att_loss)


def make():
    torch.manual_seed(0)
    model = ASRModel(10, 8, reverse_weight=0.3, lsm_weight=0.1)
    encoder_out = torch.randn(3, 5, 8)
    encoder_mask = torch.ones(3, 1, 5, dtype=torch.bool)
    ys_pad = torch.tensor([[1, 2, 3, 4, 5], [4, 5, 6, -1, -1], [7, 8, 1, -1, -1]])
    ys_pad_lens = torch.tensor([5, 3, 3])
    return model._calc_att_loss, [(encoder_out, encoder_mask, ys_pad, ys_pad_lens)]
