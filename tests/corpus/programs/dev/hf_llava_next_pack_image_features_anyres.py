"""transformers LlavaNext pack_image_features: per-image loop over anyres patches, get_anyres_image_grid_shape and unpad_image call `.tolist()` on a row of the image_sizes tensor and branch on the aspect ratio.

Source: huggingface/transformers@v5.23.0:src/transformers/models/llava_next/modeling_llava_next.py:42-146,266-331; src/transformers/image_processing_utils.py:642-677
Kept: get_anyres_image_grid_shape, select_best_resolution and unpad_image
verbatim (isinstance checks, `image_size.tolist()`, the aspect-ratio branch
with int(round(...))), pack_image_features verbatim (the `shape[0] > 1` anyres
branch, config plumbing for image_size / patch_size / image_grid_pinpoints,
the np.prod shape check with logger.warning_once, newline concat, feature_lens
tensor) on a model holding image_newline.
Simplified: config objects are SimpleNamespaces; vision image_size 4, patch
size 2, embed dim 3; the vision tower is skipped (features are inputs).
"""
import functools
import logging
from types import SimpleNamespace

import numpy as np
import torch
from torch import nn

logger = logging.getLogger(__name__)


@functools.lru_cache(None)
def _warning_once(msg):
    logger.warning(msg)


logger.warning_once = _warning_once


def select_best_resolution(original_size: tuple, possible_resolutions: list) -> tuple:
    original_height, original_width = original_size
    best_fit = None
    max_effective_resolution = 0
    min_wasted_resolution = float("inf")

    for height, width in possible_resolutions:
        scale = min(width / original_width, height / original_height)
        downscaled_width, downscaled_height = int(original_width * scale), int(original_height * scale)
        effective_resolution = min(downscaled_width * downscaled_height, original_width * original_height)
        wasted_resolution = (width * height) - effective_resolution

        if effective_resolution > max_effective_resolution or (
            effective_resolution == max_effective_resolution and wasted_resolution < min_wasted_resolution
        ):
            max_effective_resolution = effective_resolution
            min_wasted_resolution = wasted_resolution
            best_fit = (height, width)

    return best_fit


def get_anyres_image_grid_shape(image_size, grid_pinpoints, patch_size):
    if not isinstance(grid_pinpoints, list):
        raise TypeError("grid_pinpoints should be a list of tuples or lists")

    # ! VERY IMPORTANT if image_size is tensor, must convert to into tuple, otherwise it will cause wrong calculate
    if not isinstance(image_size, (list, tuple)):
        if not isinstance(image_size, (torch.Tensor, np.ndarray)):
            raise TypeError(
                f"image_size invalid type: {type(image_size)} not valid, should be either list, tuple, np.ndarray or tensor"
            )
        image_size = image_size.tolist()

    height, width = select_best_resolution(image_size, grid_pinpoints)
    return height // patch_size, width // patch_size


def unpad_image(tensor, original_size):
    if not isinstance(original_size, (list, tuple)):
        if not isinstance(original_size, (torch.Tensor, np.ndarray)):
            raise TypeError(
                f"image_size invalid type: {type(original_size)} not valid, should be either list, tuple, np.ndarray or tensor"
            )
        original_size = original_size.tolist()
    original_height, original_width = original_size
    current_height, current_width = tensor.shape[1:]

    original_aspect_ratio = original_width / original_height
    current_aspect_ratio = current_width / current_height

    if original_aspect_ratio > current_aspect_ratio:
        scale_factor = current_width / original_width
        new_height = int(round(original_height * scale_factor, 7))
        padding = (current_height - new_height) // 2
        unpadded_tensor = tensor[:, padding : current_height - padding, :]
    else:
        scale_factor = current_height / original_height
        new_width = int(round(original_width * scale_factor, 7))
        padding = (current_width - new_width) // 2
        unpadded_tensor = tensor[:, :, padding : current_width - padding]

    return unpadded_tensor


class LlavaNextModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.image_newline = nn.Parameter(torch.randn(config.text_config.hidden_size))

    def pack_image_features(self, image_features, image_sizes, vision_feature_select_strategy, image_newline=None):
        new_image_features = []
        feature_lens = []
        for image_idx, image_feature in enumerate(image_features):
            if image_feature.shape[0] > 1:
                base_image_feature = image_feature[0]
                image_feature = image_feature[1:]
                height = width = self.config.vision_config.image_size // self.config.vision_config.patch_size

                num_patch_height, num_patch_width = get_anyres_image_grid_shape(
                    image_sizes[image_idx],
                    self.config.image_grid_pinpoints,
                    self.config.vision_config.image_size,
                )

                if (
                    np.prod(image_feature.shape) % (num_patch_height * num_patch_width * height * width) != 0
                    and vision_feature_select_strategy == "default"
                ):
                    logger.warning_once(
                        "Image feature shape does not line up with the provided patch size. "
                        "You may be using the `default` vision_feature_select_strategy with a"
                        " visual encoder that does not have CLS."
                    )

                image_feature = image_feature.view(num_patch_height, num_patch_width, height, width, -1)
                image_feature = image_feature.permute(4, 0, 2, 1, 3).contiguous()
                image_feature = image_feature.flatten(1, 2).flatten(2, 3)
                image_feature = unpad_image(image_feature, image_sizes[image_idx])
                if image_newline is not None:
                    image_feature = torch.cat(
                        (
                            image_feature,
                            image_newline[:, None, None]
                            .expand(*image_feature.shape[:-1], 1)
                            .to(image_feature.device, image_feature.dtype),
                        ),
                        dim=-1,
                    )
                image_feature = image_feature.flatten(1, 2).transpose(0, 1)
                image_feature = torch.cat((base_image_feature, image_feature), dim=0)
            else:
                image_feature = image_feature[0]
                if image_newline is not None:
                    image_feature = torch.cat((image_feature, image_newline[None].to(image_feature)), dim=0)
            new_image_features.append(image_feature)
            feature_lens.append(image_feature.size(0))
        feature_lens = torch.tensor(feature_lens, dtype=torch.long, device=image_features[0].device)
        return new_image_features, feature_lens

    def forward(self, image_features, image_sizes, vision_feature_select_strategy="default"):
        image_features, feature_lens = self.pack_image_features(
            image_features,
            image_sizes,
            vision_feature_select_strategy=vision_feature_select_strategy,
            image_newline=self.image_newline,
        )
        return torch.cat(image_features, dim=0), feature_lens


def get_config():
    return SimpleNamespace(
        vision_config=SimpleNamespace(image_size=4, patch_size=2),
        text_config=SimpleNamespace(hidden_size=3),
        image_grid_pinpoints=[[4, 8], [8, 4], [8, 8]],
    )


model = torch.compile(LlavaNextModel(get_config()).eval())


def make():
    torch.manual_seed(0)
    m = LlavaNextModel(get_config()).eval()
    wide = torch.randn(3, 4, 3)  # base + 1x2 grid for a wide image
    single = torch.randn(1, 4, 3)
    tall = torch.randn(3, 4, 3)  # base + 2x1 grid for a tall image
    square = torch.randn(5, 4, 3)  # base + 2x2 grid
    return m, [
        ([wide, single], torch.tensor([[30, 70], [50, 50]])),
        ([tall], torch.tensor([[70, 30]])),
        ([square], torch.tensor([[64, 60]])),
    ]
