"""diffusers StableDiffusionSafetyChecker: forward_onnx keeps everything in torch: any() masks and masked assignment of black images (no break).

Source: huggingface/diffusers@58eb52c080:src/diffusers/pipelines/stable_diffusion/safety_checker.py:26-29,106-129
Kept: cosine_distance, the vision model pooled output and projection, the
special-care and concept thresholds with the 0.01 adjustment, the black-image
replacement and the (images, has_nsfw_concepts) return.
Simplified: the CLIP vision tower is a linear layer; 2 special and 3 concept
embeddings of size 4.
"""
import logging

import numpy as np
import torch
from torch import nn

logger = logging.getLogger(__name__)


def cosine_distance(image_embeds, text_embeds):
    normalized_image_embeds = nn.functional.normalize(image_embeds)
    normalized_text_embeds = nn.functional.normalize(text_embeds)
    return torch.mm(normalized_image_embeds, normalized_text_embeds.t())


class VisionModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 4)

    def forward(self, x):
        h = self.proj(x)
        return h, h.tanh()


class StableDiffusionSafetyChecker(nn.Module):
    def __init__(self):
        super().__init__()
        self.vision_model = VisionModel()
        self.visual_projection = nn.Linear(4, 4, bias=False)
        self.concept_embeds = nn.Parameter(torch.randn(3, 4), requires_grad=False)
        self.special_care_embeds = nn.Parameter(torch.randn(2, 4), requires_grad=False)
        self.concept_embeds_weights = nn.Parameter(torch.full((3,), 0.2), requires_grad=False)
        self.special_care_embeds_weights = nn.Parameter(torch.full((2,), 0.3), requires_grad=False)

    @torch.no_grad()
    def forward(self, clip_input, images):
        return self.forward_onnx(clip_input, images)

    @torch.no_grad()
    def forward_onnx(self, clip_input, images):
        pooled_output = self.vision_model(clip_input)[1]
        image_embeds = self.visual_projection(pooled_output)
        special_cos_dist = cosine_distance(image_embeds, self.special_care_embeds)
        cos_dist = cosine_distance(image_embeds, self.concept_embeds)
        adjustment = 0.0
        special_scores = special_cos_dist - self.special_care_embeds_weights + adjustment
        special_care = torch.any(special_scores > 0, dim=1)
        special_adjustment = special_care * 0.01
        special_adjustment = special_adjustment.unsqueeze(1).expand(-1, cos_dist.shape[1])
        concept_scores = (cos_dist - self.concept_embeds_weights) + special_adjustment
        has_nsfw_concepts = torch.any(concept_scores > 0, dim=1)
        images[has_nsfw_concepts] = 0.0
        return images, has_nsfw_concepts


def export_checker():
    checker = StableDiffusionSafetyChecker().eval()
    return torch.compile(checker, fullgraph=True)


def make():
    torch.manual_seed(0)
    return StableDiffusionSafetyChecker(), [(torch.randn(3, 6), torch.ones(3, 3, 4, 4))]
