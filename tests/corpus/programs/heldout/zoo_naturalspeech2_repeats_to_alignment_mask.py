"""NaturalSpeech2 sampling: phoneme durations become a hard alignment mask in `generate_mask_from_repeats`, whose frame count is `lengths.amax().item()`.

Source: lucidrains/naturalspeech2-pytorch@659bec7f7543e7747e809e950cc2f84242fbeec7:naturalspeech2_pytorch/naturalspeech2_pytorch.py:87-104
Also: naturalspeech2_pytorch.py:1478-1483 (NaturalSpeech2.sample: `aln_mask =
generate_mask_from_repeats(duration).float()` then the alignment einsum of expand_encodings).
Kept: generate_mask_from_repeats verbatim (int cast, cumsum/exclusive cumsum, `.item()`
max length, three-way mask).
Simplified: einops repeat/rearrange written as expand/unsqueeze; the duration predictor is
replaced by the durations passed in; no pitch branch.
"""
import torch
import torch.nn.functional as F
from torch import einsum


def generate_mask_from_repeats(repeats):
    repeats = repeats.int()
    device = repeats.device

    lengths = repeats.sum(dim = -1)
    max_length = lengths.amax().item()
    cumsum = repeats.cumsum(dim = -1)
    cumsum_exclusive = F.pad(cumsum, (1, -1), value = 0.)

    seq = torch.arange(max_length, device = device)
    seq = seq.expand(*repeats.shape, max_length)

    cumsum = cumsum.unsqueeze(-1)
    cumsum_exclusive = cumsum_exclusive.unsqueeze(-1)

    lengths = lengths.view(-1, 1, 1)
    mask = (seq < cumsum) & (seq >= cumsum_exclusive) & (seq < lengths)
    return mask


@torch.compile
def expand_phonemes(phoneme_enc, duration):
    aln_mask = generate_mask_from_repeats(duration).float()
    attn = aln_mask.unsqueeze(1)
    return einsum('k l m n, k j m -> k j n', attn, phoneme_enc.transpose(1, 2))


def make():
    torch.manual_seed(0)
    phoneme_enc = torch.randn(2, 4, 6)
    short = torch.tensor([[1., 2., 1., 0.], [2., 1., 1., 1.]])
    long = torch.tensor([[3., 2., 4., 1.], [2., 2., 2., 2.]])
    return expand_phonemes._torchdynamo_orig_callable, [(phoneme_enc, short), (phoneme_enc, long)]
