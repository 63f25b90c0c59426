"""Parler-TTS delay pattern: `(first_codebook_ids == -1).nonzero()`, `if len(start_ids) > 0:` and builtin `min(start_ids)` slicing the prompt, then generate's revert step `output_ids[mask]` with a bool mask.

Source: huggingface/parler-tts@011855e7fe2446dab72967be66fe3892c6ae674b:parler_tts/modeling_parler_tts.py:60-125
Also: the same file's ParlerTTSForCausalLM.build_delay_pattern_mask / apply_delay_pattern_mask
wrappers (`max_length if max_length is not None else self.generation_config.max_length`) and
ParlerTTSForConditionalGeneration.generate's steps 6 and "apply the pattern mask to the
final ids" / "revert the pattern delay mask".
Kept: apply_delay_pattern_mask and build_delay_pattern_mask verbatim; the generate steps
around them.
Simplified: the decoder is a holder of generation_config and num_codebooks (no transformer);
the sampled output ids are an input instead of the sampling loop's result.
"""
from dataclasses import dataclass

import torch
from torch import nn


def apply_delay_pattern_mask(input_ids, decoder_pad_token_mask):
    """Apply a delay pattern mask to the decoder input ids, only preserving predictions where
    the mask is set to -1, and otherwise setting to the value detailed in the mask."""
    seq_len = input_ids.shape[-1]
    decoder_pad_token_mask = decoder_pad_token_mask[..., :seq_len]
    input_ids = torch.where(decoder_pad_token_mask == -1, input_ids, decoder_pad_token_mask)
    return input_ids


def build_delay_pattern_mask(
    input_ids: torch.LongTensor, bos_token_id: int, pad_token_id: int, max_length: int, num_codebooks: int
):
    """Build a delayed pattern mask to the input_ids. Each codebook is offset by the previous codebook by
    one, giving a delayed pattern mask at the start of sequence and end of sequence.
    """
    # (bsz * num_codebooks, seq_len) -> (bsz, num_codebooks, seq_len)
    input_ids = input_ids.reshape(-1, num_codebooks, input_ids.shape[-1])
    bsz, num_codebooks, seq_len = input_ids.shape

    input_ids_shifted = torch.ones((bsz, num_codebooks, max_length), dtype=torch.long, device=input_ids.device) * -1

    # we only apply the mask if we have a large enough seq len - otherwise we return as is
    if max_length < 2 * num_codebooks - 1:
        return input_ids.reshape(bsz * num_codebooks, -1), input_ids_shifted.reshape(bsz * num_codebooks, -1)

    # fill the shifted ids with the prompt entries, offset by the codebook idx
    for codebook in range(num_codebooks):
        # mono channel - loop over the codebooks one-by-one
        input_ids_shifted[:, codebook, codebook : seq_len + codebook] = input_ids[:, codebook]

    # construct a pattern mask that indicates the positions of padding tokens for each codebook
    # first fill the upper triangular part (the EOS padding)
    eos_delay_pattern = torch.triu(
        torch.ones((num_codebooks, max_length), dtype=torch.bool), diagonal=max_length - num_codebooks + 1
    )
    # then fill the lower triangular part (the BOS padding)
    bos_delay_pattern = torch.tril(torch.ones((num_codebooks, max_length), dtype=torch.bool))

    bos_mask = ~(bos_delay_pattern).to(input_ids.device)
    eos_mask = ~(eos_delay_pattern).to(input_ids.device)
    mask = ~(bos_delay_pattern + eos_delay_pattern).to(input_ids.device)
    input_ids = mask * input_ids_shifted + ~bos_mask * bos_token_id + ~eos_mask * pad_token_id

    # find the first position to start generating - this is the first place we have the -1 token
    # and will always be in the first codebook (since it has no codebook offset)
    first_codebook_ids = input_ids[:, 0, :]
    start_ids = (first_codebook_ids == -1).nonzero()[:, 1]
    if len(start_ids) > 0:
        first_start_id = min(start_ids)
    else:
        # we have no tokens that need to be filled - return entire matrix of input ids
        first_start_id = seq_len

    # (bsz * num_codebooks, seq_len) -> (bsz, num_codebooks, seq_len)
    pattern_mask = input_ids.reshape(bsz * num_codebooks, -1)
    input_ids = input_ids[..., :first_start_id].reshape(bsz * num_codebooks, -1)
    return input_ids, pattern_mask


@dataclass
class GenerationConfig:
    bos_token_id: int = 1025
    pad_token_id: int = 1024
    max_length: int = 10


class ParlerTTSForCausalLM(nn.Module):
    def __init__(self, num_codebooks: int = 3):
        super().__init__()
        self.num_codebooks = num_codebooks
        self.generation_config = GenerationConfig()

    # Ignore copy
    def build_delay_pattern_mask(
        self, input_ids: torch.LongTensor, bos_token_id: int, pad_token_id: int, max_length: int = None
    ):
        max_length = max_length if max_length is not None else self.generation_config.max_length
        return build_delay_pattern_mask(input_ids, bos_token_id, pad_token_id, max_length, self.num_codebooks)

    @staticmethod
    def apply_delay_pattern_mask(input_ids, decoder_pad_token_mask):
        """Apply a delay pattern mask to the decoder input ids, only preserving predictions where
        the mask is set to -1, and otherwise setting to the value detailed in the mask."""
        return apply_delay_pattern_mask(input_ids, decoder_pad_token_mask)

    def forward(self, input_ids: torch.Tensor, output_ids: torch.Tensor, max_length=None):
        generation_config = self.generation_config
        batch_size = input_ids.shape[0] // self.num_codebooks

        # 6. Prepare `input_ids` which will be used for auto-regressive generation
        input_ids, delay_pattern_mask = self.build_delay_pattern_mask(
            input_ids,
            bos_token_id=generation_config.bos_token_id,
            pad_token_id=generation_config.pad_token_id,
            max_length=max_length,
        )

        # apply the pattern mask to the final ids
        output_ids = self.apply_delay_pattern_mask(output_ids, delay_pattern_mask)

        # revert the pattern delay mask by filtering the eos and bos token ids from the delay pattern mask
        _, mask = self.build_delay_pattern_mask(
            input_ids,
            bos_token_id=generation_config.bos_token_id,
            pad_token_id=generation_config.pad_token_id,
            max_length=output_ids.shape[1],
        )

        mask = (mask != generation_config.bos_token_id) & (mask != generation_config.pad_token_id)
        output_ids = output_ids[mask].reshape(batch_size, self.num_codebooks, -1)
        return output_ids


decoder = torch.compile(ParlerTTSForCausalLM(num_codebooks=3))


def make():
    torch.manual_seed(0)
    model = ParlerTTSForCausalLM(num_codebooks=3)
    bos = model.generation_config.bos_token_id
    # a BOS-only prompt (generation starts at step 1) and a prompt that fills the whole horizon
    short_prompt = torch.full((2 * 3, 1), bos, dtype=torch.long)
    long_prompt = torch.randint(0, 1024, (2 * 3, 8))
    output_ids = torch.randint(0, 1024, (2 * 3, 10))
    return model, [(short_prompt, output_ids), (long_prompt, output_ids), (short_prompt, output_ids[:, :4], 4)]
