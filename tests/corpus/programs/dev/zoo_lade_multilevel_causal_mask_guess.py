"""Lookahead decoding: multi-level causal mask with guess-token diagonals, patched in as `_prepare_decoder_attention_mask`.

Source: hao-ai-lab/LookaheadDecoding@1f825c21b1d486607919c3bbaee9602ccb99bbc3:lade/models/llama.py:1-125
Kept: j_make_causal_mask_multilevel as written (prefill causal fill with
asserts; guess block built with `fill_diagonal_` / `diagonal_scatter` of
`torch.tensor([...]).repeat(lguess // guess_size)` for guess_size 2-4 and
the generic loop for larger sizes; the per-level `masked_fill_` and diagonal fills with their asserts;
the past-length zero concat and `expand`), and j_prepare_decoder_attention_mask
unpacking the `others` tuple, building the causal mask when `input_shape[-1] >
1` and adding transformers' `_expand_mask` of the padding mask.
Simplified: the explicit guess_size 5/6/7 branches (same pattern, one more
diagonal each) are dropped, larger sizes fall to the generic loop;
`_expand_mask` (transformers 4.34) is copied in; a bare module
stands in for the LlamaModel the function is bound to (it only receives
`self`). The mask builder is compiled on its own
(`torch.compile(j_prepare_decoder_attention_mask)`); window 3, levels
[3, 4], two guesses of size 2 or 3, past length 5.
"""
from typing import Optional

import torch
from torch import nn


def _expand_mask(mask: torch.Tensor, dtype: torch.dtype, tgt_len: Optional[int] = None):
    bsz, src_len = mask.size()
    tgt_len = tgt_len if tgt_len is not None else src_len

    expanded_mask = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)

    inverted_mask = 1.0 - expanded_mask

    return inverted_mask.masked_fill(inverted_mask.to(torch.bool), torch.finfo(dtype).min)


def j_make_causal_mask_multilevel(
    level_sizes: list,is_prefill:bool, WINDOW_SIZE: int, guess : list, guess_size: int, not_seq:bool, continue_all:bool,input_ids_shape: torch.Size, dtype: torch.dtype, device: torch.device, past_key_values_length: int = 0
):
    """
    Make causal mask used for bi-directional self-attention.
    """
    bsz, tgt_len = input_ids_shape
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min, device=device)

    if is_prefill:
        mask_cond = torch.arange(mask.size(-1), device=device)
        mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
        mask = mask.to(dtype)
        assert past_key_values_length == 0
        assert guess is None
        return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len + past_key_values_length)

    tiny_mask_size = level_sizes[0] + 1
    mask_cond = torch.arange(tiny_mask_size, device=device)
    hm = mask_cond < (mask_cond + 1).view(tiny_mask_size, 1)

    if guess is not None:
        mask[:,0] = 0
        lguess = len(guess)
        if guess_size == 2:
            small_m = torch.tensor([0, torch.finfo(dtype).min]).repeat(lguess // 2)[:-1]
            mask[-lguess:,-lguess:] = mask[-lguess:,-lguess:].fill_diagonal_(0).diagonal_scatter(small_m, -1)
        elif guess_size == 3:
            small_m1 = torch.tensor([0, 0, torch.finfo(dtype).min]).repeat(lguess // 3)[:-1]
            small_m2 = torch.tensor([0, torch.finfo(dtype).min, torch.finfo(dtype).min]).repeat(lguess // 3)[:-2]
            mask[-lguess:,-lguess:] = mask[-lguess:,-lguess:].fill_diagonal_(0).diagonal_scatter(small_m1, -1).diagonal_scatter(small_m2, -2)
        elif guess_size == 4:
            small_m1 = torch.tensor([0, 0, 0, torch.finfo(dtype).min]).repeat(lguess // 4)[:-1]
            small_m2 = torch.tensor([0, 0, torch.finfo(dtype).min, torch.finfo(dtype).min]).repeat(lguess // 4)[:-2]
            small_m3 = torch.tensor([0, torch.finfo(dtype).min, torch.finfo(dtype).min, torch.finfo(dtype).min]).repeat(lguess // 4)[:-3]
            mask[-lguess:,-lguess:] = mask[-lguess:,-lguess:].fill_diagonal_(0).diagonal_scatter(small_m1, -1).diagonal_scatter(small_m2, -2).diagonal_scatter(small_m3, -3)
        else:
            mask[-lguess:,-lguess:] = mask[-lguess:,-lguess:].fill_diagonal_(0)
            for i in range(guess_size - 1): #7 : 0 - 5
                small_l = [0] * (guess_size - i - 1)  + [torch.finfo(dtype).min] * (i + 1)
                small_m = torch.tensor(small_l).repeat(lguess // guess_size)[:-1 - i]
                mask[-lguess:,-lguess:] = mask[-lguess:,-lguess:].diagonal_scatter(small_m, -1 - i)
            #assert False

    else:
        assert tgt_len == sum(level_sizes) + 1

    for ll in range(len(level_sizes)):
        if ll > 0:
            assert level_sizes[ll] == tiny_mask_size
        mask[tiny_mask_size*ll:tiny_mask_size*(ll+1),:tiny_mask_size].masked_fill_(hm, 0)
        for row in range(1, ll + 1):
            mask[tiny_mask_size*ll:tiny_mask_size*(ll+1),tiny_mask_size*row:tiny_mask_size*(row+1)].fill_diagonal_(0)

    mask = mask.to(dtype)

    if past_key_values_length > 0:
        mask = torch.cat([torch.zeros(tgt_len, past_key_values_length, dtype=dtype, device=device), mask], dim=-1)
    return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len + past_key_values_length)


def j_prepare_decoder_attention_mask(self, attention_mask, input_shape, inputs_embeds, past_key_values_length, others):
    # create causal mask
    # [bsz, seq_len] -> [bsz, 1, tgt_seq_len, src_seq_len]
    WINDOW_SIZE, is_prefill, guess, guess_size, not_seq, continue_all, level_sizes = others
    combined_attention_mask = None
    if input_shape[-1] > 1:
        combined_attention_mask = j_make_causal_mask_multilevel(
            level_sizes,
            is_prefill,
            WINDOW_SIZE,
            guess,
            guess_size,
            not_seq,
            continue_all,
            input_shape,
            inputs_embeds.dtype,
            device=inputs_embeds.device,
            past_key_values_length=past_key_values_length,
        )

    if attention_mask is not None:

        # [bsz, seq_len] -> [bsz, 1, tgt_seq_len, src_seq_len]
        expanded_attn_mask = _expand_mask(attention_mask, inputs_embeds.dtype, tgt_len=input_shape[-1]).to(
            inputs_embeds.device
        )
        combined_attention_mask = (
            expanded_attn_mask if combined_attention_mask is None else expanded_attn_mask + combined_attention_mask
        )

    return combined_attention_mask


class LlamaModelStub(nn.Module):
    pass


compiled_mask = torch.compile(j_prepare_decoder_attention_mask)


def make():
    torch.manual_seed(0)
    model = LlamaModelStub()
    W = 3
    levels = [3, 4]
    # prefill of a 5-token prompt
    prefill = (model, torch.ones(1, 5), (1, 5), torch.randn(1, 5, 8), 0,
               (W, True, None, 2, False, False, levels))
    # lookahead step: 1 + 3 + 4 window tokens, two guesses of size 2, 5 cached
    guess2 = [11, 12, 13, 14]
    step2 = (model, torch.ones(1, 5 + 12), (1, 12), torch.randn(1, 12, 8), 5,
             (W, False, guess2, 2, False, False, levels))
    # two guesses of size 3
    guess3 = [11, 12, 13, 14, 15, 16]
    step3 = (model, torch.ones(1, 5 + 14), (1, 14), torch.randn(1, 14, 8), 5,
             (W, False, guess3, 3, False, False, levels))
    # no guess found in the pool: only the lookahead branch
    step_none = (model, torch.ones(1, 5 + 8), (1, 8), torch.randn(1, 8, 8), 5,
                 (W, False, None, 2, False, False, levels))
    # single-token decode: no causal mask, only the padding mask
    decode = (model, torch.ones(1, 6), (1, 1), torch.randn(1, 1, 8), 5,
              (W, False, None, 2, False, False, levels))
    return j_prepare_decoder_attention_mask, [prefill, step2, step3, step_none, decode]
