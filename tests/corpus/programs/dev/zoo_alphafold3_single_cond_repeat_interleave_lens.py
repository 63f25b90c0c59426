"""AlphaFold3 atom conditioning: token-level single representation expanded to atoms with `batch_repeat_interleave` (output length `total_lens.amax()` sizes a torch.zeros buffer), then padded or sliced to the atom sequence length.

Source: lucidrains/alphafold3-pytorch@1fd83f319b58a0bd78507f16e9cb75943655770f:alphafold3_pytorch/alphafold3.py:417-484
Also: alphafold3.py:223-260 (exists, default, exclusive_cumsum), alphafold3.py:326-335
(lens_to_mask), alphafold3.py:2538-2543 (DiffusionModule: single_repr_to_atom_feat_cond,
batch_repeat_interleave, pad_or_slice_to, the sum with atom_feats_cond),
alphafold3_pytorch/attention.py:50-104 (pad_at_dim, slice_at_dim, pad_to_length, pad_or_slice_to).
Kept: batch_repeat_interleave verbatim (sink scatter, gather, padding value by dtype) and
the padding helpers.
Simplified: einx/einops written as broadcasting, reshape and torch.where; @typecheck
(jaxtyping/beartype) dropped; the diffusion module is reduced to the conditioning step;
dim 8, 3 tokens.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn, Tensor
from torch.nn import Module


def exists(v):
    return v is not None


def default(v, d):
    return v if exists(v) else d


def exclusive_cumsum(t, dim = -1):
    return t.cumsum(dim = dim) - t


def pack_one(t, pattern):
    # einops pack_one(t, 'b n *'): flatten the trailing dims
    shape = t.shape
    packed = t.reshape(*shape[:2], -1)

    def unpack_one(to_unpack, unpack_pattern = None):
        return to_unpack.reshape(*to_unpack.shape[:2], *shape[2:])

    return packed, unpack_one


def lens_to_mask(
    lens,
    max_len: int | None = None
):

    device = lens.device
    if not exists(max_len):
        max_len = lens.amax()
    arange = torch.arange(max_len, device = device)
    return arange < lens[..., None]


def batch_repeat_interleave(
    feats,
    lens,
    output_padding_value: float | int | bool | None = None, # this value determines what the output padding value will be
):

    device, dtype = feats.device, feats.dtype

    batch, seq, *dims = feats.shape

    # get mask from lens

    mask = lens_to_mask(lens)

    # derive arange

    window_size = mask.shape[-1]
    arange = torch.arange(window_size, device = device)

    offsets = exclusive_cumsum(lens)
    indices = arange + offsets[..., None]

    # create output tensor + a sink position on the very right (index max_len)

    total_lens = lens.clamp(min = 0).sum(dim = -1)
    output_mask = lens_to_mask(total_lens)

    max_len = total_lens.amax()

    output_indices = torch.zeros((batch, max_len + 1), device = device, dtype = torch.long)

    indices = indices.masked_fill(~mask, max_len) # scatter to sink position for padding
    indices = indices.reshape(batch, -1)

    # scatter

    seq_arange = torch.arange(seq, device = device)
    seq_arange = seq_arange.repeat_interleave(window_size).expand(batch, -1)

    output_indices = output_indices.scatter(1, indices, seq_arange)

    # remove sink

    output_indices = output_indices[:, :-1]

    # gather

    feats, unpack_one = pack_one(feats, 'b n *')
    output_indices = output_indices[..., None].expand(-1, -1, feats.shape[-1])
    output = feats.gather(1, output_indices)
    output = unpack_one(output)

    # set output padding value

    output_padding_value = default(output_padding_value, False if dtype == torch.bool else 0)

    output_mask = output_mask.reshape(*output_mask.shape, *((1,) * (output.ndim - 2)))
    output = torch.where(output_mask, output, output_padding_value)

    return output


def pad_at_dim(
    t,
    pad: tuple[int, int],
    *,
    dim = -1,
    value = 0.
):
    dims_from_right = (- dim - 1) if dim < 0 else (t.ndim - dim - 1)
    zeros = ((0, 0) * dims_from_right)
    return F.pad(t, (*zeros, *pad), value = value)


def slice_at_dim(
    t: Tensor,
    dim_slice: slice,
    *,
    dim: int
) -> Tensor:
    dim += (t.ndim if dim < 0 else 0)
    colons = [slice(None)] * t.ndim
    colons[dim] = dim_slice
    return t[tuple(colons)]


def pad_to_length(
    t: Tensor,
    length: int,
    *,
    dim: int = -1,
    value = 0
) -> Tensor:
    padding = max(length - t.shape[dim], 0)

    if padding == 0:
        return t

    return pad_at_dim(t, (0, padding), dim = dim, value = value)


def pad_or_slice_to(
    t: Tensor,
    length: int,
    *,
    dim: int,
    pad_value = 0
) -> Tensor:
    curr_length = t.shape[dim]

    if curr_length < length:
        t = pad_to_length(t, length, dim = dim, value = pad_value)
    elif curr_length > length:
        t = slice_at_dim(t, slice(0, length), dim = dim)

    return t


class AtomFeatCondition(Module):
    def __init__(self, dim_single = 8, dim_atom = 6):
        super().__init__()
        self.single_repr_to_atom_feat_cond = nn.Sequential(
            nn.LayerNorm(dim_single),
            nn.Linear(dim_single, dim_atom, bias = False)
        )

    def forward(self, conditioned_single_repr, atom_feats_cond, molecule_atom_lens):
        single_repr_cond = self.single_repr_to_atom_feat_cond(conditioned_single_repr)

        single_repr_cond = batch_repeat_interleave(single_repr_cond, molecule_atom_lens)
        single_repr_cond = pad_or_slice_to(single_repr_cond, length = atom_feats_cond.shape[1], dim = 1)

        atom_feats_cond = single_repr_cond + atom_feats_cond
        return atom_feats_cond


cond = torch.compile(AtomFeatCondition())


def make():
    torch.manual_seed(0)
    single = torch.randn(2, 3, 8)
    atoms = torch.randn(2, 7, 6)
    short = torch.tensor([[2, 1, 2], [1, 1, 0]])
    long = torch.tensor([[3, 3, 2], [2, 2, 2]])
    exact = torch.tensor([[3, 2, 2], [4, 2, 1]])
    return AtomFeatCondition(), [(single, atoms, short), (single, atoms, long), (single, atoms, exact)]
