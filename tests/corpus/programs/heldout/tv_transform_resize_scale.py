"""torchvision GeneralizedRCNNTransform resize: eager path computes the scale with Python min() on shapes (no break).

Source: pytorch/vision@v0.29.2:torchvision/models/detection/transform.py:25-83
Kept: the is_tracing / is_scripting / normal three-way split, the fixed_size
plumbing, min/max over `image.shape[-2:]`, interpolate with
recompute_scale_factor, and the masks branch of the target dict.
Simplified: torchvision._is_tracing is torch.jit.is_tracing; onnx helpers dropped.
"""
import torch
from torch import Tensor


def _is_tracing():
    return torch._C._get_tracing_state() is not None


def _resize_image_and_masks(image: Tensor, self_min_size: int, self_max_size: int, target=None, fixed_size=None):
    if _is_tracing():
        im_shape = torch.tensor(image.shape[-2:])
    elif torch.jit.is_scripting():
        im_shape = torch.tensor(image.shape[-2:])
    else:
        im_shape = image.shape[-2:]

    size = None
    scale_factor = None
    recompute_scale_factor = None
    if fixed_size is not None:
        size = [fixed_size[1], fixed_size[0]]
    else:
        if torch.jit.is_scripting() or _is_tracing():
            min_size = torch.min(im_shape).to(dtype=torch.float32)
            max_size = torch.max(im_shape).to(dtype=torch.float32)
            scale = torch.min(float(self_min_size) / min_size, float(self_max_size) / max_size)
            scale_factor = scale.item()
        else:
            min_size = min(im_shape)
            max_size = max(im_shape)
            scale_factor = min(self_min_size / min_size, self_max_size / max_size)
        recompute_scale_factor = True

    image = torch.nn.functional.interpolate(
        image[None], size=size, scale_factor=scale_factor, mode="bilinear",
        recompute_scale_factor=recompute_scale_factor, align_corners=False,
    )[0]
    if target is None:
        return image, target
    if "masks" in target:
        mask = target["masks"]
        mask = torch.nn.functional.interpolate(
            mask[:, None].float(), size=size, scale_factor=scale_factor, recompute_scale_factor=recompute_scale_factor
        )[:, 0].byte()
        target["masks"] = mask
    return image, target


class Resize(torch.nn.Module):
    def __init__(self, min_size=16, max_size=24):
        super().__init__()
        self.min_size, self.max_size = min_size, max_size

    def forward(self, image, masks):
        image, target = _resize_image_and_masks(image, self.min_size, self.max_size, {"masks": masks})
        return image, target["masks"]


resize = torch.compile(Resize().eval())


def make():
    torch.manual_seed(0)
    return Resize(), [(torch.rand(3, 10, 12), torch.ones(2, 10, 12, dtype=torch.uint8))]
