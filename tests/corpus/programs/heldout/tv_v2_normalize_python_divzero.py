"""torchvision.transforms.v2 normalize_image: the divide-by-zero check runs on the Python list (no break).

Source: pytorch/vision@v0.29.2:torchvision/transforms/v2/functional/_misc.py:37-67
Kept: the float/ndim checks, `divzero` computed from the list/number std, the
in-place/out-of-place split and the view to (C, 1, 1).
Simplified: a 3x4x4 image; the kernel registry around it is dropped.
"""
import torch


def normalize_image(image: torch.Tensor, mean: list, std: list, inplace: bool = False) -> torch.Tensor:
    if not image.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {image.dtype}.")
    if image.ndim < 3:
        raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got {image.shape}.")
    if isinstance(std, (tuple, list)):
        divzero = not all(std)
    elif isinstance(std, (int, float)):
        divzero = std == 0
    else:
        divzero = False
    if divzero:
        raise ZeroDivisionError("std evaluated to zero, leading to division by zero.")

    dtype = image.dtype
    device = image.device
    mean = torch.as_tensor(mean, dtype=dtype, device=device)
    std = torch.as_tensor(std, dtype=dtype, device=device)
    if mean.ndim == 1:
        mean = mean.view(-1, 1, 1)
    if std.ndim == 1:
        std = std.view(-1, 1, 1)
    if inplace:
        image = image.sub_(mean)
    else:
        image = image.sub(mean)
    return image.div_(std)


@torch.compile(fullgraph=False, dynamic=False)
def transform(image):
    return normalize_image(image, mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])


def make():
    torch.manual_seed(0)
    return transform._torchdynamo_orig_callable, [(torch.rand(3, 4, 4),), (torch.rand(2, 3, 4, 4),)]
