"""BLT local-decoder patch ids: `decoder_patch_ids_from_lengths` asserts on tensors (`torch.all(first_patch_length == patch_lengths[:, 0])`, the boe count, the length sum, non-negativity) with f-string messages that format tensors, then `patch_ids_from_lengths` builds ids by a cumsum/arange comparison and asserts on `torch.max`/`torch.min`.

Source: facebookresearch/blt@9774ed4fcc78313f9f218295f3d7e4decdadf2ae:bytelatent/model/blt.py:119-141
Also: the same file's patch_ids_from_lengths (387-405) and ByteLatentTransformer.forward
(884-1000), which calls `decoder_patch_ids_from_lengths(patch_lengths, nb_boe,
local_decoder_tokens.shape[-1])` with `nb_boe = int(0 if self.patching_mode != "" else
self.patch_size - 1)`.
Kept: both functions verbatim.
Simplified: compiled directly rather than inside the whole model forward;
2 sequences of 12 bytes, entropy-style lengths (first patch 1, nb_boe 0)
and static-style lengths (first patch 4 = patch_size, nb_boe 3).
"""
import torch


def decoder_patch_ids_from_lengths(patch_lengths, nb_boe, seq_len):
    first_patch_length = patch_lengths[0, 0]
    assert torch.all(
        first_patch_length == patch_lengths[:, 0]
    ), "first patch should always be the same size (1 for dynamic, patch_size for static)."
    assert (
        first_patch_length - nb_boe == 1
    ), f"First patch (patch length: {first_patch_length}) should have one non-boe token (boe toks: {nb_boe})"
    # Remove first patch from patch_ids for local decoder inputs and shift the last patch.
    # decoder_patch_lengths = patch_lengths[:, 1:].clone()
    # decoder_patch_lengths = add_to_last_nonzero_patch(decoder_patch_lengths, 1)
    decoder_patch_lengths = patch_lengths[:, 1:]
    assert (
        decoder_patch_lengths.sum() + (nb_boe + 1) * patch_lengths.shape[0]
        == patch_lengths.sum()
    ), f"{decoder_patch_lengths.sum() + (nb_boe + 1) * patch_lengths.shape[0]} != {patch_lengths.sum()}"
    assert torch.all(decoder_patch_lengths >= 0), f"{decoder_patch_lengths}"
    decoder_patch_ids = patch_ids_from_lengths(
        patch_lengths=decoder_patch_lengths, seq_len=seq_len
    )
    return decoder_patch_ids


def patch_ids_from_lengths(patch_lengths, seq_len):
    bs, num_patches = patch_lengths.shape
    # Create a tensor of cumulative sums of the patch lengths
    cum_d = torch.cat(
        [
            torch.zeros(bs, 1, dtype=patch_lengths.dtype, device=patch_lengths.device),
            patch_lengths.cumsum(dim=-1),
        ],
        dim=-1,
    )
    patch_ids = (cum_d.unsqueeze(-1) <= torch.arange(seq_len, device=cum_d.device)).sum(
        dim=-2
    ) - 1
    assert not (
        torch.max(patch_ids) > patch_lengths.shape[-1] or torch.min(patch_ids) < 0
    ), f"{torch.max(patch_ids)} > {patch_lengths.shape[-1]} or {torch.min(patch_ids)} < 0"
    return patch_ids


decoder_patch_ids = torch.compile(decoder_patch_ids_from_lengths)


def make():
    torch.manual_seed(0)
    dynamic = torch.tensor([[1, 3, 2, 4, 2, 0], [1, 5, 1, 1, 3, 1]])
    static = torch.tensor([[4, 4, 4, 4], [4, 4, 4, 4]])
    return decoder_patch_ids_from_lengths, [(dynamic, 0, 12), (static, 3, 12)]
