"""Phi-4-multimodal feature embedding: `if image_pixel_values is not None and (input_ids == self.image_token_id).any():`
(and the same for audio) decide which modality encoders run before merging with position masks.

Source: huggingface/transformers@v5.23.0:src/transformers/models/phi4_multimodal/modeling_phi4_multimodal.py:1335-1382
(Phi4MultimodalFeatureEmbedding.forward)
Census: penguinwu/oss-model-graph-break-corpus sweeps Phi4MultimodalModel (its audio tower is listed with breaks in
eval+train); this is the multimodal merge in front of the decoder.
Kept: the no_grad position masks, both `... is not None and (...).any()` conditions, the projection-mode string,
the three-way merge.
Simplified: the image/audio embedders are Linear projections added at every position.
"""
import torch
from torch import nn


class VisionConfig:
    image_token_id = 8


class Phi4MultimodalConfig:
    vision_config = VisionConfig()
    hidden_size = 4


class Phi4MultimodalFeatureEmbedding(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.image_token_id = config.vision_config.image_token_id
        self.audio_token_id = 9
        self.image_proj = nn.Linear(3, config.hidden_size)
        self.audio_proj = nn.Linear(2, config.hidden_size)

    def image_embed(self, input_ids, inputs_embeds, image_pixel_values=None, **kwargs):
        return inputs_embeds + self.image_proj(image_pixel_values).mean(dim=1, keepdim=True)

    def audio_embed(self, input_ids, inputs_embeds, audio_input_features=None, audio_projection_mode="speech",
                    **kwargs):
        scale = 1.0 if audio_projection_mode == "speech" else 0.5
        return inputs_embeds + scale * self.audio_proj(audio_input_features).mean(dim=1, keepdim=True)

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
            audio_embeds = self.audio_embed(
                input_ids,
                inputs_embeds,
                audio_input_features=audio_input_features,
                audio_projection_mode=audio_projection_mode,
            )

        # merge image and audio
        if image_embeds is not None and audio_embeds is not None:
            inputs_embeds = image_embeds * image_position_mask + audio_embeds * non_image_position_mask
        elif image_embeds is not None:
            inputs_embeds = image_embeds
        elif audio_embeds is not None:
            inputs_embeds = audio_embeds

        return inputs_embeds


embed = torch.compile(Phi4MultimodalFeatureEmbedding(Phi4MultimodalConfig()))


def make():
    torch.manual_seed(0)
    ids = torch.tensor([[1, 8, 8, 9, 2]])
    text_only = torch.tensor([[1, 2, 3, 4, 5]])
    emb = torch.randn(1, 5, 4)
    img = torch.randn(1, 2, 3)
    aud = torch.randn(1, 3, 2)
    return Phi4MultimodalFeatureEmbedding(Phi4MultimodalConfig()), [
        (ids, emb, img, aud),
        (ids, emb, None, aud),
        (text_only, emb, img, aud),
        (ids, emb),
    ]
