"""torchvision GeneralizedRCNNTransform.resize: in training the target size is drawn with `torch_choice`, `int(torch.empty(1).uniform_(...).item())`; eval uses `min_size[-1]`.

Source: pytorch/vision@v0.29.1:torchvision/models/detection/transform.py:25-75,166-205
Kept: torch_choice verbatim, resize with its self.training / _skip_resize
branches, _resize_image_and_masks' normal (not scripting, not tracing) path
computing scale_factor from Python min/max of the shape, and resize_boxes.
Simplified: no masks/keypoints; normalize and batching left out.
"""
from typing import Optional

import torch
from torch import Tensor, nn


def _resize_image_and_masks(image, self_min_size, self_max_size, target=None, fixed_size=None):
    im_shape = image.shape[-2:]

    size: Optional[list[int]] = None
    scale_factor: Optional[float] = None
    recompute_scale_factor: Optional[bool] = None
    if fixed_size is not None:
        size = [fixed_size[1], fixed_size[0]]
    else:
        # Do it the normal way
        min_size = min(im_shape)
        max_size = max(im_shape)
        scale_factor = min(self_min_size / min_size, self_max_size / max_size)
        recompute_scale_factor = True

    image = torch.nn.functional.interpolate(
        image[None],
        size=size,
        scale_factor=scale_factor,
        mode="bilinear",
        recompute_scale_factor=recompute_scale_factor,
        align_corners=False,
    )[0]
    return image, target


def resize_boxes(boxes: Tensor, original_size: list[int], new_size: list[int]) -> Tensor:
    ratios = [
        torch.tensor(s, dtype=torch.float32, device=boxes.device)
        / torch.tensor(s_orig, dtype=torch.float32, device=boxes.device)
        for s, s_orig in zip(new_size, original_size)
    ]
    ratio_height, ratio_width = ratios
    xmin, ymin, xmax, ymax = boxes.unbind(1)
    xmin = xmin * ratio_width
    xmax = xmax * ratio_width
    ymin = ymin * ratio_height
    ymax = ymax * ratio_height
    return torch.stack((xmin, ymin, xmax, ymax), dim=1)


class GeneralizedRCNNTransform(nn.Module):
    def __init__(self, min_size, max_size, fixed_size=None, _skip_resize=False):
        super().__init__()
        if not isinstance(min_size, (list, tuple)):
            min_size = (min_size,)
        self.min_size = min_size
        self.max_size = max_size
        self.fixed_size = fixed_size
        self._skip_resize = _skip_resize

    def torch_choice(self, k: list[int]) -> int:
        """
        Implements `random.choice` via torch ops, so it can be compiled with
        TorchScript and we use PyTorch's RNG (not native RNG)
        """
        index = int(torch.empty(1).uniform_(0.0, float(len(k))).item())
        return k[index]

    def resize(self, image, target=None):
        h, w = image.shape[-2:]
        if self.training:
            if self._skip_resize:
                return image, target
            size = self.torch_choice(self.min_size)
        else:
            size = self.min_size[-1]
        image, target = _resize_image_and_masks(image, size, self.max_size, target, self.fixed_size)

        if target is None:
            return image, target

        bbox = target["boxes"]
        bbox = resize_boxes(bbox, (h, w), image.shape[-2:])
        target["boxes"] = bbox
        return image, target

    def forward(self, image, target=None):
        return self.resize(image, target)


transform = torch.compile(GeneralizedRCNNTransform((8, 10, 12), 20).eval())


def make():
    torch.manual_seed(0)
    image = torch.rand(3, 6, 9)
    return GeneralizedRCNNTransform((8, 10, 12), 20).eval(), [(image,), (image, {"boxes": torch.tensor([[1.0, 1.0, 4.0, 5.0]])})]
