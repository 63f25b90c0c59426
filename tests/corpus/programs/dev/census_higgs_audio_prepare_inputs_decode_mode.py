"""Higgs-Audio-v2 `prepare_inputs_for_generation`: masks already-cached audio ids with a cumsum comparison, then
`if audio_input_ids_mask is not None and (~audio_input_ids_mask[:, :-1]).all():` switches to decoding mode.

Source: huggingface/transformers@v5.23.0:src/transformers/models/higgs_audio_v2/modeling_higgs_audio_v2.py:595-627
Census: penguinwu/oss-model-graph-break-corpus sweeps the audio LM families; this is the per-step input preparation
a compiled generation step runs.
Kept: the cache-length branch (audio token mask, in-cache counts, cumsum validity), the all-masked decoding
branch (slice, contiguous clone, popping input_ids), the returned dict.
Simplified: the cache is a small object with get_seq_length(); the method is called from a module forward.
"""
import torch
from torch import nn


class HiggsAudioV2Config:
    audio_token_id = 7
    audio_delay_token_id = 8


class TinyCache:
    def __init__(self, length):
        self.length = length

    def get_seq_length(self):
        return self.length


class HiggsAudioV2ForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.audio_embed = nn.Embedding(16, 4)

    def prepare_inputs_for_generation(self, input_ids, audio_input_ids=None, audio_input_ids_mask=None,
                                      past_key_values=None):
        model_inputs = {"input_ids": input_ids, "past_key_values": past_key_values}
        if audio_input_ids is not None and model_inputs.get("past_key_values") is not None:
            current_cache_length = model_inputs.get("past_key_values").get_seq_length()
            audio_token_mask = (input_ids == self.config.audio_token_id) | (
                input_ids == self.config.audio_delay_token_id
            )
            in_cache_num_audio_input_ids = audio_token_mask[:, :current_cache_length].sum(dim=-1)

            # already cached audio_input_ids should be masked
            # this surmise that audio_input_ids are right padded!
            valid_audio_input_ids = audio_input_ids_mask.cumsum(dim=-1) > in_cache_num_audio_input_ids[:, None]
            audio_input_ids_mask = audio_input_ids_mask & valid_audio_input_ids

        if audio_input_ids_mask is not None and (~audio_input_ids_mask[:, :-1]).all():
            # in decoding mode, we only pass audio_input_ids
            audio_input_ids = audio_input_ids[:, -1:, :].clone(memory_format=torch.contiguous_format)
            model_inputs.pop("input_ids", None)
            audio_input_ids_mask = None

        model_inputs["audio_input_ids"] = audio_input_ids
        model_inputs["audio_input_ids_mask"] = audio_input_ids_mask
        return model_inputs

    def forward(self, input_ids, audio_input_ids, audio_input_ids_mask, past_key_values=None):
        inputs = self.prepare_inputs_for_generation(input_ids, audio_input_ids, audio_input_ids_mask, past_key_values)
        return self.audio_embed(inputs["audio_input_ids"]).sum(dim=(1, 2))


step = torch.compile(HiggsAudioV2ForConditionalGeneration(HiggsAudioV2Config()))


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[1, 7, 8, 2]])
    audio = torch.randint(0, 16, (1, 3, 2))
    mask = torch.tensor([[True, True, True]])
    return HiggsAudioV2ForConditionalGeneration(HiggsAudioV2Config()), [
        (ids, audio, mask),
        (ids, audio, mask, TinyCache(4)),
    ]
