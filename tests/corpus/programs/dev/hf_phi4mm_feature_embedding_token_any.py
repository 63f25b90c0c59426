"""Phi-4-multimodal feature embedding: `if image_pixel_values is not None and (input_ids == self.image_token_id).any():` dispatch per modality.

Source: huggingface/transformers@v5.23.0:src/transformers/models/phi4_multimodal/modeling_phi4_multimodal.py:1338-1382
Kept: the no_grad image position mask, the two modality gates combining an
`is not None` check with a tensor `.any()`, the audio projection mode string,
and the merge: image/audio/neither branches with torch.where on the position mask.
Simplified: image/audio embedders are linear layers writing into their token
positions; hidden 8; image token 5, audio token 6.
"""
import torch
from torch import nn


class VisionConfig:
    image_token_id = 5


class Config:
    vision_config = VisionConfig()


class Phi4MultimodalFeatureEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = Config()
        self.image_token_id = 5
        self.audio_token_id = 6
        self.image_proj = nn.Linear(6, 8)
        self.audio_proj = nn.Linear(4, 8)

    def image_embed(self, input_ids, inputs_embeds, image_pixel_values, **kwargs):
        return inputs_embeds + self.image_proj(image_pixel_values).mean(1, keepdim=True)

    def audio_embed(self, input_ids, inputs_embeds, audio_input_features, audio_projection_mode="speech", **kwargs):
        scale = 2.0 if audio_projection_mode == "vision" else 1.0
        return inputs_embeds + scale * self.audio_proj(audio_input_features).mean(1, keepdim=True)

    def forward(self, input_ids, inputs_embeds, image_pixel_values=None, audio_input_features=None):
        with torch.no_grad():
            image_position_mask = (input_ids == self.config.vision_config.image_token_id).unsqueeze(-1)
            non_image_position_mask = ~image_position_mask
        image_embeds = None
        audio_embeds = None
        if image_pixel_values is not None and (input_ids == self.image_token_id).any():
            image_embeds = self.image_embed(input_ids, inputs_embeds, image_pixel_values=image_pixel_values)
        if audio_input_features is not None and (input_ids == self.audio_token_id).any():
            audio_projection_mode = "vision" if image_pixel_values is not None else "speech"
            audio_embeds = self.audio_embed(input_ids, inputs_embeds, audio_input_features=audio_input_features, audio_projection_mode=audio_projection_mode)
        if image_embeds is not None and audio_embeds is not None:
            inputs_embeds = image_embeds * image_position_mask + audio_embeds * non_image_position_mask
        elif image_embeds is not None:
            inputs_embeds = image_embeds
        elif audio_embeds is not None:
            inputs_embeds = audio_embeds
        return inputs_embeds


embed = torch.compile(Phi4MultimodalFeatureEmbedding())


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[1, 5, 5, 6, 2]])
    text_only = torch.tensor([[1, 2, 3, 4, 2]])
    emb = torch.randn(1, 5, 8)
    return Phi4MultimodalFeatureEmbedding(), [(ids, emb, torch.randn(1, 2, 6), torch.randn(1, 3, 4)), (text_only, emb, torch.randn(1, 2, 6))]
