"""AlphaFold3 AtomToTokenPooler: atom features averaged per token with `mean_pool_with_lens`, whose `sum_pool_with_lens` asserts `(lens.sum(dim = -1) <= seq_len).all()` before the cumsum-gather pooling.

Source: lucidrains/alphafold3-pytorch@1fd83f319b58a0bd78507f16e9cb75943655770f:alphafold3_pytorch/alphafold3.py:347-381
Also: alphafold3.py:2308-2330 (AtomToTokenPooler), alphafold3.py:223-227 (exists, default).
Kept: mean_pool_with_lens, sum_pool_with_lens (mask, the `.all()` assert with its message,
padded cumsums, gather, difference) and AtomToTokenPooler (keyword-only forward, proj then
pool) verbatim apart from einx/einops.
Simplified: einx.divide/einx.where and einops repeat written as broadcasting, torch.where
and expand; @typecheck dropped; LinearNoBias is nn.Linear(bias=False); dim 6 -> 8.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn import Module


def exists(v):
    return v is not None


def default(v, d):
    return v if exists(v) else d


LinearNoBias = lambda *args, **kwargs: nn.Linear(*args, bias = False, **kwargs)


def mean_pool_with_lens(
    feats,
    lens
):

    summed, mask = sum_pool_with_lens(feats, lens)
    avg = summed / lens.clamp(min = 1)[..., None]
    avg = torch.where(mask[..., None], avg, 0.)
    return avg


def sum_pool_with_lens(
    feats,
    lens
):

    seq_len = feats.shape[1]

    mask = lens > 0
    assert (lens.sum(dim = -1) <= seq_len).all(), 'one of the lengths given exceeds the total sequence length of the features passed in'

    cumsum_feats = feats.cumsum(dim = 1)
    cumsum_feats = F.pad(cumsum_feats, (0, 0, 1, 0), value = 0.)

    cumsum_indices = lens.cumsum(dim = 1)
    cumsum_indices = F.pad(cumsum_indices, (1, 0), value = 0)

    cumsum_indices = cumsum_indices[..., None].expand(-1, -1, cumsum_feats.shape[-1])
    sel_cumsum = cumsum_feats.gather(-2, cumsum_indices)

    # subtract cumsum at one index from the previous one
    summed = sel_cumsum[:, 1:] - sel_cumsum[:, :-1]

    return summed, mask


class AtomToTokenPooler(Module):
    def __init__(
        self,
        dim,
        dim_out = None
    ):
        super().__init__()
        dim_out = default(dim_out, dim)

        self.proj = nn.Sequential(
            LinearNoBias(dim, dim_out),
            nn.ReLU()
        )

    def forward(
        self,
        *,
        atom_feats,
        atom_mask,
        molecule_atom_lens
    ):

        atom_feats = self.proj(atom_feats)
        tokens = mean_pool_with_lens(atom_feats, molecule_atom_lens)
        return tokens


class TokenEmbedder(Module):
    def __init__(self, dim_atom = 6, dim_token = 8):
        super().__init__()
        self.atom_to_token = AtomToTokenPooler(dim = dim_atom, dim_out = dim_token)

    def forward(self, atom_feats, atom_mask, molecule_atom_lens):
        return self.atom_to_token(
            atom_feats = atom_feats,
            atom_mask = atom_mask,
            molecule_atom_lens = molecule_atom_lens
        )


embedder = torch.compile(TokenEmbedder())


def make():
    torch.manual_seed(0)
    atoms = torch.randn(2, 7, 6)
    atom_mask = torch.ones(2, 7, dtype = torch.bool)
    lens = torch.tensor([[2, 3, 2], [1, 4, 0]])
    too_long = torch.tensor([[3, 3, 3], [1, 1, 1]])
    return TokenEmbedder(), [(atoms, atom_mask, lens), (atoms, atom_mask, too_long)]


RAISING_INPUTS = {1: "AssertionError"}
