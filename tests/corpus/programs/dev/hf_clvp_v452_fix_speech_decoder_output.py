"""CLVP fix_speech_decoder_output at v4.52.4: a Python loop over per-sequence stop masks with `if each_seq_stop_token_index.sum() == 0: continue`.

Source: huggingface/transformers@v4.52.4:src/transformers/models/clvp/modeling_clvp.py:1523-1551
Kept: the method verbatim: drop the bos column, torch.where stop indices,
masked_fill with the fixing code, iteration over the stop-index rows, the
zero-sum skip, argmax position, the tail overwrite and the
`stm - 3 < shape[1]` tensor write of the last three codes.
Simplified: config values inline; eos 9, fixing codes [0, 7, 8, 8].
"""
import torch
from torch import nn


class SpeechDecoderConfig:
    eos_token_id = 9


class DecoderConfig:
    decoder_fixing_codes = [0, 7, 8, 8]


class Config:
    decoder_config = DecoderConfig()


class SpeechDecoderModel(nn.Module):
    config = SpeechDecoderConfig()


class ClvpModelForConditionalGeneration(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = Config()
        self.speech_decoder_model = SpeechDecoderModel()

    def fix_speech_decoder_output(self, speech_ids: torch.LongTensor) -> torch.LongTensor:
        decoder_fixing_codes = self.config.decoder_config.decoder_fixing_codes
        speech_ids = speech_ids[:, 1:]
        stop_token_indices = torch.where(speech_ids == self.speech_decoder_model.config.eos_token_id, 1, 0)
        speech_ids = torch.masked_fill(speech_ids, mask=stop_token_indices.bool(), value=decoder_fixing_codes[0])
        for i, each_seq_stop_token_index in enumerate(stop_token_indices):
            if each_seq_stop_token_index.sum() == 0:
                continue
            stm = each_seq_stop_token_index.argmax()
            speech_ids[i, stm:] = decoder_fixing_codes[0]
            if stm - 3 < speech_ids.shape[1]:
                speech_ids[i, -3:] = torch.tensor([decoder_fixing_codes[1:]], device=speech_ids.device, dtype=torch.long)
        return speech_ids

    def forward(self, speech_ids):
        return self.fix_speech_decoder_output(speech_ids)


model = torch.compile(ClvpModelForConditionalGeneration())


def make():
    return ClvpModelForConditionalGeneration(), [(torch.tensor([[1, 4, 5, 9, 6, 6], [1, 4, 5, 6, 3, 2]]),)]
