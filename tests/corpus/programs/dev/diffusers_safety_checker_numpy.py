"""diffusers StableDiffusionSafetyChecker: the default forward moves cosine distances to numpy and loops over Python scores with `.item()` thresholds.

Source: huggingface/diffusers@58eb52c080:src/diffusers/pipelines/stable_diffusion/safety_checker.py:26-29,54-103
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
        pooled_output = self.vision_model(clip_input)[1]
        image_embeds = self.visual_projection(pooled_output)
        special_cos_dist = cosine_distance(image_embeds, self.special_care_embeds).cpu().float().numpy()
        cos_dist = cosine_distance(image_embeds, self.concept_embeds).cpu().float().numpy()
        result = []
        batch_size = image_embeds.shape[0]
        for i in range(batch_size):
            result_img = {"special_scores": {}, "special_care": [], "concept_scores": {}, "bad_concepts": []}
            adjustment = 0.0
            for concept_idx in range(len(special_cos_dist[0])):
                concept_cos = special_cos_dist[i][concept_idx]
                concept_threshold = self.special_care_embeds_weights[concept_idx].item()
                result_img["special_scores"][concept_idx] = round(concept_cos - concept_threshold + adjustment, 3)
                if result_img["special_scores"][concept_idx] > 0:
                    result_img["special_care"].append({concept_idx, result_img["special_scores"][concept_idx]})
                    adjustment = 0.01
            for concept_idx in range(len(cos_dist[0])):
                concept_cos = cos_dist[i][concept_idx]
                concept_threshold = self.concept_embeds_weights[concept_idx].item()
                result_img["concept_scores"][concept_idx] = round(concept_cos - concept_threshold + adjustment, 3)
                if result_img["concept_scores"][concept_idx] > 0:
                    result_img["bad_concepts"].append(concept_idx)
            result.append(result_img)
        has_nsfw_concepts = [len(res["bad_concepts"]) > 0 for res in result]
        for idx, has_nsfw_concept in enumerate(has_nsfw_concepts):
            if has_nsfw_concept:
                if torch.is_tensor(images) or torch.is_tensor(images[0]):
                    images[idx] = torch.zeros_like(images[idx])
                else:
                    images[idx] = np.zeros(images[idx].shape)
        if any(has_nsfw_concepts):
            logger.warning(
                "Potential NSFW content was detected in one or more images. A black image will be returned instead."
                " Try again with a different prompt and/or seed."
            )
        return images, has_nsfw_concepts


safety_checker = torch.compile(StableDiffusionSafetyChecker())


def make():
    torch.manual_seed(0)
    return StableDiffusionSafetyChecker(), [(torch.randn(3, 6), torch.ones(3, 3, 4, 4))]
