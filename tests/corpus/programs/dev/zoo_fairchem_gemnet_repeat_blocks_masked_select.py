"""fairchem's GemNet `repeat_blocks`: `assert all(sizes >= 0)` iterates a tensor, `if not torch.all(sizes_nonzero)` routes to `torch.masked_select`, `insert_dummy = repeats[0] == 0` is tested with `if`, `torch.repeat_interleave` takes tensor repeats, and the output length is `(sizes * repeats).sum()`.

Source: FAIR-Chem/fairchem@13378cdc9141f0e6907704bb31e142cdfe7f083b:ocpmodels/models/gemnet/utils.py:82-220
Kept: repeat_blocks verbatim (all branches: zero sizes, leading zero
repeats, skipped groups, block_inc/repeat_inc handling).
Simplified: torch_scatter.segment_csr (C++) is replaced by a cumsum-based
Python equivalent with the same signature; a GemNet-style block expands
per-edge features for the triplet interaction with the indices.
"""
import torch
from torch import nn


def segment_csr(src, indptr, reduce="sum"):
    cumsum = torch.cat((src.new_zeros(1), src.cumsum(0)))
    return cumsum[indptr[1:]] - cumsum[indptr[:-1]]


def repeat_blocks(
    sizes,
    repeats,
    continuous_indexing=True,
    start_idx=0,
    block_inc=0,
    repeat_inc=0,
):
    assert sizes.dim() == 1
    assert all(sizes >= 0)

    # Remove 0 sizes
    sizes_nonzero = sizes > 0
    if not torch.all(sizes_nonzero):
        assert block_inc == 0  # Implementing this is not worth the effort
        sizes = torch.masked_select(sizes, sizes_nonzero)
        if isinstance(repeats, torch.Tensor):
            repeats = torch.masked_select(repeats, sizes_nonzero)
        if isinstance(repeat_inc, torch.Tensor):
            repeat_inc = torch.masked_select(repeat_inc, sizes_nonzero)

    if isinstance(repeats, torch.Tensor):
        assert all(repeats >= 0)
        insert_dummy = repeats[0] == 0
        if insert_dummy:
            one = sizes.new_ones(1)
            zero = sizes.new_zeros(1)
            sizes = torch.cat((one, sizes))
            repeats = torch.cat((one, repeats))
            if isinstance(block_inc, torch.Tensor):
                block_inc = torch.cat((zero, block_inc))
            if isinstance(repeat_inc, torch.Tensor):
                repeat_inc = torch.cat((zero, repeat_inc))
    else:
        assert repeats >= 0
        insert_dummy = False

    # Get repeats for each group using group lengths/sizes
    r1 = torch.repeat_interleave(torch.arange(len(sizes), device=sizes.device), repeats)

    # Get total size of output array, as needed to initialize output indexing array
    N = (sizes * repeats).sum()

    id_ar = torch.ones(N, dtype=torch.long, device=sizes.device)
    id_ar[0] = 0
    insert_index = sizes[r1[:-1]].cumsum(0)
    insert_val = (1 - sizes)[r1[:-1]]

    if isinstance(repeats, torch.Tensor) and torch.any(repeats == 0):
        diffs = r1[1:] - r1[:-1]
        indptr = torch.cat((sizes.new_zeros(1), diffs.cumsum(0)))
        if continuous_indexing:
            # If a group was skipped (repeats=0) we need to add its size
            insert_val += segment_csr(sizes[: r1[-1]], indptr, reduce="sum")

        # Add block increments
        if isinstance(block_inc, torch.Tensor):
            insert_val += segment_csr(block_inc[: r1[-1]], indptr, reduce="sum")
        else:
            insert_val += block_inc * (indptr[1:] - indptr[:-1])
            if insert_dummy:
                insert_val[0] -= block_inc
    else:
        idx = r1[1:] != r1[:-1]
        if continuous_indexing:
            insert_val[idx] = 1

        # Add block increments
        insert_val[idx] += block_inc

    # Add repeat_inc within each group
    if isinstance(repeat_inc, torch.Tensor):
        insert_val += repeat_inc[r1[:-1]]
        if isinstance(repeats, torch.Tensor):
            repeat_inc_inner = repeat_inc[repeats > 0][:-1]
        else:
            repeat_inc_inner = repeat_inc[:-1]
    else:
        insert_val += repeat_inc
        repeat_inc_inner = repeat_inc

    # Subtract the increments between groups
    if isinstance(repeats, torch.Tensor):
        repeats_inner = repeats[repeats > 0][:-1]
    else:
        repeats_inner = repeats
    insert_val[r1[1:] != r1[:-1]] -= repeat_inc_inner * repeats_inner

    # Assign index-offsetting values
    id_ar[insert_index] = insert_val

    if insert_dummy:
        id_ar = id_ar[1:]
        if continuous_indexing:
            id_ar[0] -= 1

    # Set start index now, in case of insertion due to leading repeats=0
    id_ar[0] += start_idx

    # Finally index into input array for the group repeated o/p
    res = id_ar.cumsum(0)
    return res


class TripletExpansion(nn.Module):
    def __init__(self, emb_size=4):
        super().__init__()
        self.dense = nn.Linear(emb_size, emb_size)

    def forward(self, m_edge, neighbors, repeats, repeat_inc=0):
        idx = repeat_blocks(neighbors, repeats, continuous_indexing=True, repeat_inc=repeat_inc)
        return self.dense(m_edge[idx])


def make():
    torch.manual_seed(0)
    m = torch.randn(12, 4)
    return TripletExpansion(), [
        (m, torch.tensor([1, 3, 2]), torch.tensor([3, 2, 3])),
        (m, torch.tensor([0, 3, 2]), torch.tensor([3, 2, 3])),
        (m, torch.tensor([2, 3, 2]), torch.tensor([0, 2, 2])),
        (m, torch.tensor([1, 3, 2]), torch.tensor([2, 2, 1]), torch.tensor([1, 0, 2])),
    ]


triplets = torch.compile(TripletExpansion(), dynamic=True)
