"""torchvision draw_segmentation_masks in a compiled predict-and-visualise step: _log_api_usage_once, dtype/shape validation, colour palette from tensors, per-mask boolean-index assignment (no break: Dynamo traces all of it).

Source: pytorch/vision@v0.29.2:torchvision/utils.py:418-483,717-766,769-792
Kept: draw_segmentation_masks verbatim (the @torch.no_grad() decorator, the
jit checks around _log_api_usage_once, the raise chain, `if num_masks == 0`
warning, per-mask `img_to_draw[:, mask] = color[:, None]`, overlap zeroing,
alpha blend), _generate_color_palette, _parse_colors and _log_api_usage_once.
Simplified: ImageColor.getrgb is a 3-entry name table (PIL not used); the
segmentation model is a 1x1 conv whose argmax gives the masks; images 3x6x6.
"""
import warnings
from types import FunctionType
from typing import Any

import torch
from torch import nn

_COLORS = {"red": (255, 0, 0), "green": (0, 128, 0), "blue": (0, 0, 255)}


class ImageColor:
    @staticmethod
    def getrgb(color):
        return _COLORS[color]


def _log_api_usage_once(obj: Any) -> None:
    module = obj.__module__
    if not module.startswith("torchvision"):
        module = f"torchvision.internal.{module}"
    name = obj.__class__.__name__
    if isinstance(obj, FunctionType):
        name = obj.__name__
    torch._C._log_api_usage_once(f"{module}.{name}")


def _generate_color_palette(num_objects: int):
    palette = torch.tensor([2**25 - 1, 2**15 - 1, 2**21 - 1])
    return [tuple((i * palette) % 255) for i in range(num_objects)]


def _parse_colors(colors, *, num_objects, dtype=torch.uint8):
    if colors is None:
        colors = _generate_color_palette(num_objects)
    elif isinstance(colors, list):
        if len(colors) < num_objects:
            raise ValueError(
                f"Number of colors must be equal or larger than the number of objects, but got {len(colors)} < {num_objects}."
            )
    elif not isinstance(colors, (tuple, str)):
        raise ValueError(f"colors must be a tuple or a string, or a list thereof, but got {colors}.")
    elif isinstance(colors, tuple) and len(colors) != 3:
        raise ValueError(f"If passed as tuple, colors should be an RGB triplet, but got {colors}.")
    else:  # colors specifies a single color for all objects
        colors = [colors] * num_objects

    colors = [ImageColor.getrgb(color) if isinstance(color, str) else color for color in colors]
    if dtype.is_floating_point:  # [0, 255] -> [0, 1]
        colors = [tuple(v / 255 for v in color) for color in colors]
    return colors


@torch.no_grad()
def draw_segmentation_masks(image, masks, alpha=0.8, colors=None):
    if not torch.jit.is_scripting() and not torch.jit.is_tracing():
        _log_api_usage_once(draw_segmentation_masks)
    if not isinstance(image, torch.Tensor):
        raise TypeError(f"The image must be a tensor, got {type(image)}")
    elif not (image.dtype == torch.uint8 or image.is_floating_point()):
        raise ValueError(f"The image dtype must be uint8 or float, got {image.dtype}")
    elif image.dim() != 3:
        raise ValueError("Pass individual images, not batches")
    elif image.size()[0] != 3:
        raise ValueError("Pass an RGB image. Other Image formats are not supported")
    if masks.ndim == 2:
        masks = masks[None, :, :]
    if masks.ndim != 3:
        raise ValueError("masks must be of shape (H, W) or (batch_size, H, W)")
    if masks.dtype != torch.bool:
        raise ValueError(f"The masks must be of dtype bool. Got {masks.dtype}")
    if masks.shape[-2:] != image.shape[-2:]:
        raise ValueError("The image and the masks must have the same height and width")

    num_masks = masks.size()[0]
    overlapping_masks = masks.sum(dim=0) > 1

    if num_masks == 0:
        warnings.warn("masks doesn't contain any mask. No mask was drawn")
        return image

    original_dtype = image.dtype
    colors = [
        torch.tensor(color, dtype=original_dtype, device=image.device)
        for color in _parse_colors(colors, num_objects=num_masks, dtype=original_dtype)
    ]

    img_to_draw = image.detach().clone()
    # TODO: There might be a way to vectorize this
    for mask, color in zip(masks, colors):
        img_to_draw[:, mask] = color[:, None]

    img_to_draw[:, overlapping_masks] = 0

    out = image * (1 - alpha) + img_to_draw * alpha
    return out.to(original_dtype)


class TinySegmenter(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.classifier = nn.Conv2d(3, num_classes, 1)

    def forward(self, x):
        return {"out": self.classifier(x)}


def predict_and_overlay(model, image, colors=None):
    out = model(image.float()[None] / 255)["out"][0]
    num_classes = out.shape[0]
    masks = out.argmax(0) == torch.arange(num_classes)[:, None, None]
    return draw_segmentation_masks(image, masks, alpha=0.6, colors=colors)


overlay = torch.compile(predict_and_overlay)


def make():
    torch.manual_seed(0)
    model = TinySegmenter()
    image = torch.randint(0, 256, (3, 6, 6), dtype=torch.uint8)
    return (lambda img, colors: predict_and_overlay(model, img, colors)), [
        (image, None),
        (image, ["red", "green", "blue"]),
        (image, (10, 200, 30)),
    ]
