"""Residual VQ with quantize dropout in training: dropout index from `rand.randrange(...)`.

Source: pytorch/pytorch#121350 (https://github.com/pytorch/pytorch/issues/121350)
(found compiling lucidrains/audiolm-pytorch; the break is at vector_quantize_pytorch
1.14.1 residual_vq.py:155, `rand_quantize_dropout_index = rand.randrange(self.quantize_dropout_cutoff_index, num_quant)`).
Kept: `ResidualVQ.forward` as in 1.14.1 (quantize dropout only in training,
`rand = random.Random(seed) if exists(seed) else random`, `randrange` of the
dropout index, round-up to `quantize_dropout_multiple_of`, null indices/loss for
dropped layers, the layer loop, `map(partial(torch.stack, dim=-1), ...)`).
This program calls the ResidualVQ directly (no grouped wrapper, so no fixed
seed: `rand` is the `random` module), with `quantize_dropout_multiple_of=2`.
Simplified: the inner `VectorQuantize` is a small nearest-code quantizer
returning `(quantize, embed_ind, loss)` with loss shaped (1,); no projections,
no image fmaps; dim 8, 4 quantizers, 16 codes.
"""
import random
from functools import partial
from math import ceil

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn import Module, ModuleList


def exists(val):
    return val is not None


def default(val, d):
    return val if exists(val) else d


def round_up_multiple(num, mult):
    return ceil(num / mult) * mult


class VectorQuantize(Module):
    # stand-in for vector_quantize_pytorch.VectorQuantize: nearest code, straight-through
    def __init__(self, dim, codebook_size, codebook_dim=None, accept_image_fmap=False, commitment_weight=1.):
        super().__init__()
        self.embed = nn.Parameter(torch.randn(codebook_size, dim))
        self.commitment_weight = commitment_weight
        self.has_projections = False

    def forward(self, x, mask=None, indices=None, sample_codebook_temp=None, freeze_codebook=False):
        dist = -torch.cdist(x, self.embed.unsqueeze(0).expand(x.shape[0], -1, -1))
        embed_ind = dist.argmax(dim=-1)
        quantize = F.embedding(embed_ind, self.embed)
        loss = (F.mse_loss(quantize.detach(), x) * self.commitment_weight).unsqueeze(0)
        quantize = x + (quantize - x).detach()
        return quantize, embed_ind, loss


class ResidualVQ(Module):
    """ Follows Algorithm 1. in https://arxiv.org/pdf/2107.03312.pdf """
    def __init__(
        self,
        *,
        dim,
        num_quantizers,
        codebook_dim=None,
        shared_codebook=False,
        heads=1,
        quantize_dropout=False,
        quantize_dropout_cutoff_index=0,
        quantize_dropout_multiple_of=1,
        accept_image_fmap=False,
        **kwargs
    ):
        super().__init__()
        assert heads == 1, 'residual vq is not compatible with multi-headed codes'
        codebook_dim = default(codebook_dim, dim)
        codebook_input_dim = codebook_dim * heads

        requires_projection = codebook_input_dim != dim
        self.project_in = nn.Linear(dim, codebook_input_dim) if requires_projection else nn.Identity()
        self.project_out = nn.Linear(codebook_input_dim, dim) if requires_projection else nn.Identity()

        self.num_quantizers = num_quantizers

        self.accept_image_fmap = accept_image_fmap
        self.layers = ModuleList([VectorQuantize(dim=codebook_dim, codebook_dim=codebook_dim, accept_image_fmap=accept_image_fmap, **kwargs) for _ in range(num_quantizers)])

        self.quantize_dropout = quantize_dropout and num_quantizers > 1

        assert quantize_dropout_cutoff_index >= 0

        self.quantize_dropout_cutoff_index = quantize_dropout_cutoff_index
        self.quantize_dropout_multiple_of = quantize_dropout_multiple_of  # encodec paper proposes structured dropout, believe this was set to 4

    def forward(
        self,
        x,
        indices=None,
        return_all_codes=False,
        sample_codebook_temp=None,
        freeze_codebook=False,
        mask=None,
        rand_quantize_dropout_fixed_seed=None
    ):
        num_quant, quant_dropout_multiple_of, return_loss, device = self.num_quantizers, self.quantize_dropout_multiple_of, exists(indices), x.device

        x = self.project_in(x)

        assert not (self.accept_image_fmap and exists(indices))

        quantized_out = 0.
        residual = x

        all_losses = []
        all_indices = []

        if return_loss:
            assert not torch.any(indices == -1), 'some of the residual vq indices were dropped out. please use indices derived when the module is in eval mode to derive cross entropy loss'
            ce_losses = []

        should_quantize_dropout = self.training and self.quantize_dropout and not return_loss

        # sample a layer index at which to dropout further residual quantization
        # also prepare null indices and loss

        if should_quantize_dropout:
            rand = random.Random(rand_quantize_dropout_fixed_seed) if exists(rand_quantize_dropout_fixed_seed) else random

            rand_quantize_dropout_index = rand.randrange(self.quantize_dropout_cutoff_index, num_quant)

            if quant_dropout_multiple_of != 1:
                rand_quantize_dropout_index = round_up_multiple(rand_quantize_dropout_index + 1, quant_dropout_multiple_of) - 1

            null_indices_shape = (x.shape[0], *x.shape[-2:]) if self.accept_image_fmap else tuple(x.shape[:2])
            null_indices = torch.full(null_indices_shape, -1., device=device, dtype=torch.long)
            null_loss = torch.full((1,), 0., device=device, dtype=x.dtype)

        # go through the layers

        for quantizer_index, layer in enumerate(self.layers):

            if should_quantize_dropout and quantizer_index > rand_quantize_dropout_index:
                all_indices.append(null_indices)
                all_losses.append(null_loss)
                continue

            layer_indices = None
            if return_loss:
                layer_indices = indices[..., quantizer_index]

            quantized, *rest = layer(
                residual,
                mask=mask,
                indices=layer_indices,
                sample_codebook_temp=sample_codebook_temp,
                freeze_codebook=freeze_codebook
            )

            residual = residual - quantized.detach()
            quantized_out = quantized_out + quantized

            if return_loss:
                ce_loss = rest[0]
                ce_losses.append(ce_loss)
                continue

            embed_indices, loss = rest

            all_indices.append(embed_indices)
            all_losses.append(loss)

        # project out, if needed

        quantized_out = self.project_out(quantized_out)

        # whether to early return the cross entropy loss

        if return_loss:
            return quantized_out, sum(ce_losses)

        # stack all losses and indices

        all_losses, all_indices = map(partial(torch.stack, dim=-1), (all_losses, all_indices))

        ret = (quantized_out, all_indices, all_losses)

        return ret


def build_quantizer():
    return ResidualVQ(
        dim=8,
        num_quantizers=4,
        codebook_size=16,
        quantize_dropout=True,
        quantize_dropout_multiple_of=2,
    )


residual_vq = torch.compile(build_quantizer())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 6, 8)
    return build_quantizer(), [(x,)]
