"""Granite Speech at v4.52.4: `if torch.all(... != ...).item(): raise ValueError`, then a boolean-mask read of audio features and masked_scatter.

Source: huggingface/transformers@v4.52.4:src/transformers/models/granite_speech/modeling_granite_speech.py:504-537
Kept: get_merged_audio_embeddings verbatim (audio token index, torch.where
of ids, embedding lookup, the special mask, dtype/device move, the
input_features_mask branch with the `.item()` count check and
`audio_features[input_features_mask]`, masked_scatter).
Simplified: the language model is an embedding; hidden 4; audio token 9.
"""
import torch
from torch import nn


class Config:
    audio_token_id = 9


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed_tokens = nn.Embedding(10, 4)

    def get_input_embeddings(self):
        return self.embed_tokens


class GraniteSpeechForConditionalGeneration(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = Config()
        self.language_model = LanguageModel()

    def get_merged_audio_embeddings(self, input_ids, audio_features, input_features_mask=None):
        is_audio_index = input_ids == self.config.audio_token_id
        llm_input_ids = torch.where(is_audio_index, 0, input_ids)
        inputs_embeds = self.language_model.get_input_embeddings()(llm_input_ids)
        special_audio_mask = is_audio_index.unsqueeze(-1)
        audio_features = audio_features.to(inputs_embeds.device, inputs_embeds.dtype)
        if input_features_mask is not None:
            if torch.all(is_audio_index.int().sum(dim=1) != input_features_mask.int().sum(dim=1)).item():
                raise ValueError("Number of audio tokens does not match number of audio features")
            audio_features = audio_features[input_features_mask]
        inputs_embeds = inputs_embeds.masked_scatter(special_audio_mask, audio_features)
        return inputs_embeds

    def forward(self, input_ids, audio_features, input_features_mask=None):
        return self.get_merged_audio_embeddings(input_ids, audio_features, input_features_mask)


model = torch.compile(GraniteSpeechForConditionalGeneration())


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[1, 9, 9, 2], [1, 9, 3, 2]])
    feats = torch.randn(2, 2, 4)
    mask = torch.tensor([[True, True], [True, False]])
    return GraniteSpeechForConditionalGeneration(), [(ids, feats.reshape(4, 4)[:3]), (ids, feats, mask)]
