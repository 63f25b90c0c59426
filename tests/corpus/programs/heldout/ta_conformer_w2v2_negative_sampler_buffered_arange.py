"""torchaudio prototype Conformer-wav2vec2 NegativeSampler: a function-attribute arange buffer grown with resize_/arange(out=), randint negatives bumped by a masked in-place add.

Source: pytorch/audio@01374e7d8c:src/torchaudio/prototype/models/_conformer_wav2vec2.py:_buffered_arange,_sample_negatives,NegativeSampler,_get_conformer_negativer_sampler,ConformerWav2Vec2PretrainModel.forward
Kept: _buffered_arange (hasattr on the function, `resize_`, `torch.arange(max,
out=...)`, slice), _sample_negatives (zero/zero early return, view, the
`assert high > 1`, per-branch tszs/randint, `neg_idxs[neg_idxs >= tszs] += 1`,
batch offsets, cat of in-utterance and cross-sample negatives, gather and
permute) and NegativeSampler (Linear preprocessor, tuple return) as built by
_get_conformer_negativer_sampler; the pretraining model's step that feeds it
(masked frames selected with a boolean mask index, then the sampler).
Simplified: the Conformer encoder and mask generator are replaced by a
fixed span mask of equal count per utterance (the pretrain model relies on
that for its `.view(B, -1, D)`); 3 + 2 negatives, 8-dim features.
"""
from typing import Optional, Tuple

import torch
from torch import nn, Tensor
from torch.nn import Module


def _buffered_arange(max) -> Tensor:
    """Compute arange using a buffered tensor across function calls.
    Produces same result as torch.arange(end=max).

    Args:
        max (int): Ending value for arange.
    """
    if not hasattr(_buffered_arange, "buf"):
        _buffered_arange.buf = torch.LongTensor()
    if max > _buffered_arange.buf.numel():
        _buffered_arange.buf.resize_(max)
        torch.arange(max, out=_buffered_arange.buf)
    return _buffered_arange.buf[:max]


def _sample_negatives(input: Tensor, num_negatives: int, cross_sample_negatives: int) -> Tuple[Tensor, Tensor]:
    if num_negatives == 0 and cross_sample_negatives == 0:
        return (
            torch.zeros(0).to(input.device, input.dtype),
            torch.zeros(0).to(input.device, input.dtype),
        )

    B, T, D = input.shape
    input = input.view(-1, D)

    cross_high = T * B
    high = T

    assert high > 1

    if num_negatives > 0:
        tszs = _buffered_arange(T).unsqueeze(-1).expand(-1, num_negatives).flatten()

        neg_idxs = torch.randint(low=0, high=high - 1, size=(B, num_negatives * T))
        neg_idxs[neg_idxs >= tszs] += 1

    if cross_sample_negatives > 0:
        tszs = _buffered_arange(T).unsqueeze(-1).expand(-1, cross_sample_negatives).flatten()

        cross_neg_idxs = torch.randint(low=0, high=cross_high - 1, size=(B, cross_sample_negatives * T))
        cross_neg_idxs[cross_neg_idxs >= tszs] += 1

    if num_negatives > 0:
        neg_idxs = neg_idxs + (torch.arange(B).unsqueeze(1) * high)
    else:
        neg_idxs = cross_neg_idxs

    if cross_sample_negatives > 0 and num_negatives > 0:
        neg_idxs = torch.cat([neg_idxs, cross_neg_idxs], dim=1)

    negs = input[neg_idxs.view(-1)]
    negs = negs.view(B, T, num_negatives + cross_sample_negatives, D).permute(2, 0, 1, 3)  # NxBxCxT

    return negs, neg_idxs


class NegativeSampler(Module):
    def __init__(
        self,
        preprocessor: Module,
        num_negatives: int,
        cross_sample_negatives: int,
    ):
        super().__init__()
        self.preprocessor = preprocessor
        self.num_negatives = num_negatives
        self.cross_sample_negatives = cross_sample_negatives

    def forward(self, input: Tensor) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
        preprocessed = self.preprocessor(input)
        negs, neg_idxs = _sample_negatives(preprocessed, self.num_negatives, self.cross_sample_negatives)
        return preprocessed, negs, neg_idxs


def _get_conformer_negativer_sampler(
    input_dim: int,
    output_dim: int,
    num_negatives: int,
    cross_sample_negatives: int,
) -> NegativeSampler:
    preprocessor = nn.Linear(input_dim, output_dim)
    return NegativeSampler(preprocessor, num_negatives, cross_sample_negatives)


class MaskedNegatives(Module):
    """The part of ConformerWav2Vec2PretrainModel.forward around the negative sampler."""

    def __init__(self, dim=8, num_negatives=3, cross_sample_negatives=2):
        super().__init__()
        self.negative_sampler = _get_conformer_negativer_sampler(dim, dim, num_negatives, cross_sample_negatives)

    def forward(self, x: Tensor, mask_idxs: Tensor):
        # Unmasked feature is used to generate positive and negative samples.
        unmasked_x = x.clone()
        # Select the frames from masked indices for negative sampling.
        unmasked_x = unmasked_x[mask_idxs].view(x.shape[0], -1, x.shape[-1])
        targets, negs, neg_idxs = self.negative_sampler(unmasked_x)
        return targets, negs, neg_idxs


sampler = torch.compile(MaskedNegatives())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 10, 8)
    mask_idxs = torch.zeros(2, 10, dtype=torch.bool)
    mask_idxs[0, 2:6] = True
    mask_idxs[1, 5:9] = True
    return MaskedNegatives(), [(x, mask_idxs)]
