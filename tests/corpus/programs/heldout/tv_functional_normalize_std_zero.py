"""torchvision.transforms.functional normalize: `if (std == 0).any(): raise ValueError` branches on a tensor.

Source: pytorch/vision@v0.29.2:torchvision/transforms/_functional_tensor.py:905-928
Kept: the float / ndim checks, clone unless inplace, as_tensor of mean/std,
the `(std == 0).any()` guard and the view/sub_/div_ tail.
Simplified: _assert_image_tensor inlined as an ndim check; a 3x4x4 image.
"""
import torch
from torch import Tensor


def _assert_image_tensor(img: Tensor) -> None:
    if not isinstance(img, torch.Tensor):
        raise TypeError("Tensor is not a torch image.")


def normalize(tensor: Tensor, mean: list, std: list, inplace: bool = False) -> Tensor:
    _assert_image_tensor(tensor)
    if not tensor.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {tensor.dtype}.")
    if tensor.ndim < 3:
        raise ValueError(
            f"Expected tensor to be a tensor image of size (..., C, H, W). Got tensor.size() = {tensor.size()}"
        )
    if not inplace:
        tensor = tensor.clone()
    dtype = tensor.dtype
    mean = torch.as_tensor(mean, dtype=dtype, device=tensor.device)
    std = torch.as_tensor(std, dtype=dtype, device=tensor.device)
    if (std == 0).any():
        raise ValueError(f"std evaluated to zero after conversion to {dtype}, leading to division by zero.")
    if mean.ndim == 1:
        mean = mean.view(-1, 1, 1)
    if std.ndim == 1:
        std = std.view(-1, 1, 1)
    return tensor.sub_(mean).div_(std)


class Preprocess(torch.nn.Module):
    def forward(self, img, mean, std):
        return normalize(img, mean, std)


preprocess = torch.compile(Preprocess())

RAISING_INPUTS = {1: "ValueError"}


def make():
    torch.manual_seed(0)
    img = torch.rand(3, 4, 4)
    mean = torch.tensor([0.485, 0.456, 0.406])
    return Preprocess(), [(img, mean, torch.tensor([0.229, 0.224, 0.225])), (img, mean, torch.tensor([0.2, 0.0, 0.2]))]
