"""dots.3-note `_expand_inputs_for_generation`: audio chunks are validated with
`if chunk_offsets[-1] != len(chunk_tokens) or not torch.equal(...): raise ValueError`, then regrouped with
`chunk_offsets.diff().tolist()` for beam expansion.

Source: huggingface/transformers@v5.23.0:src/transformers/models/dots3_note/modeling_dots3_note.py:1799-1842
Census: penguinwu/oss-model-graph-break-corpus sweeps the newest audio/VLM families; this generation helper is
where a `torch.equal` condition appears in transformers 5.23 model code.
Kept: the method body for the input_ids path (audio mask, ceil-div chunk tokens, padded cumsum boundaries,
searchsorted offsets, the torch.equal validation with its ValueError, tolist split, repeat per beam,
index_select of the audio inputs).
Simplified: the parent class call at the end is replaced by `input_ids.repeat_interleave(expand_size, dim=0)`;
the embeddings path is dropped.
"""
import torch
import torch.nn.functional as F
from torch import nn


class AudioConfig:
    samples_per_token = 2


class Dots3NoteConfig:
    audio_token_id = 7
    audio_config = AudioConfig()


class Dots3NoteForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config

    def _expand_inputs_for_generation(self, expand_size=1, is_encoder_decoder=False, input_ids=None, **model_kwargs):
        audio_inputs = {}
        if expand_size > 1 and model_kwargs.get("input_features") is not None:
            chunk_sample_lengths = model_kwargs.get("chunk_sample_lengths")
            if chunk_sample_lengths is None:
                raise ValueError("input_features requires chunk_sample_lengths")

            audio_mask = input_ids == self.config.audio_token_id

            stride = self.config.audio_config.samples_per_token
            chunk_tokens = (chunk_sample_lengths + stride - 1) // stride
            chunk_boundaries = F.pad(chunk_tokens.cumsum(0), (1, 0))
            sample_boundaries = F.pad(audio_mask.sum(-1).cumsum(0), (1, 0)).to(chunk_boundaries.device)
            chunk_offsets = torch.searchsorted(chunk_boundaries, sample_boundaries)
            if chunk_offsets[-1] != len(chunk_tokens) or not torch.equal(
                chunk_boundaries[chunk_offsets.clamp(max=len(chunk_tokens))], sample_boundaries
            ):
                raise ValueError("Audio chunks must match the audio placeholder tokens in each sample")

            # Audio chunks are packed across samples; each beam needs its sample's whole chunk group.
            chunk_counts = chunk_offsets.diff().tolist()
            chunks = torch.arange(len(chunk_tokens), device=chunk_sample_lengths.device).split(chunk_counts)
            expanded_chunks = torch.cat([chunk.repeat(expand_size) for chunk in chunks])
            for key in ("input_features", "chunk_sample_lengths"):
                value = model_kwargs.pop(key)
                audio_inputs[key] = value.index_select(0, expanded_chunks.to(value.device))

        input_ids = input_ids.repeat_interleave(expand_size, dim=0)
        model_kwargs.update(audio_inputs)
        return input_ids, model_kwargs

    def forward(self, input_ids, input_features, chunk_sample_lengths, expand_size=2):
        input_ids, model_kwargs = self._expand_inputs_for_generation(
            expand_size=expand_size,
            input_ids=input_ids,
            input_features=input_features,
            chunk_sample_lengths=chunk_sample_lengths,
        )
        return input_ids, model_kwargs.get("input_features")


model = torch.compile(Dots3NoteForConditionalGeneration(Dots3NoteConfig()))

RAISING_INPUTS = {2: "ValueError"}


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[1, 7, 7, 2], [7, 7, 7, 3]])
    feats = torch.randn(3, 5)
    lengths = torch.tensor([4, 3, 2])  # 2 + 2 + 1 = 5 audio tokens, one chunk for sample 0, two for sample 1
    return Dots3NoteForConditionalGeneration(Dots3NoteConfig()), [
        (ids, feats, lengths),
        (ids, feats, lengths, 1),
        (ids, feats, torch.tensor([6, 3, 2])),
    ]
