"""torchvision v1 RandomApply / RandomOrder / RandomChoice around tensor transforms: `if self.p < torch.rand(1)`, `random.shuffle`, `random.choices`, in a compiled augmentation function.

Source: pytorch/vision@v0.29.2:torchvision/transforms/transforms.py:493-586; torchvision/transforms/_functional_tensor.py (_is_tensor_a_torch_image, get_dimensions, _max_value, _assert_channels, _blend, adjust_brightness, hflip)
Kept: RandomTransforms, RandomApply, RandomOrder and RandomChoice verbatim
(including _log_api_usage_once in their constructors and the sequence type
checks), and the tensor kernels hflip / adjust_brightness with their image
and channel asserts and _blend.
Simplified: RandomHorizontalFlip / ColorJitter are reduced to two small
modules calling those kernels with fixed factors; _log_api_usage_once calls
torch._C._log_api_usage_once with the class name; images are 3x4x4 floats.
"""
import random
from collections.abc import Sequence

import torch
from torch import Tensor


def _log_api_usage_once(obj) -> None:
    module = obj.__module__
    if not module.startswith("torchvision"):
        module = f"torchvision.internal.{module}"
    name = obj.__class__.__name__
    torch._C._log_api_usage_once(f"{module}.{name}")


def _is_tensor_a_torch_image(x: Tensor) -> bool:
    return x.ndim >= 2


def _assert_image_tensor(img: Tensor) -> None:
    if not _is_tensor_a_torch_image(img):
        raise TypeError("Tensor is not a torch image.")


def get_dimensions(img: Tensor) -> list[int]:
    _assert_image_tensor(img)
    channels = 1 if img.ndim == 2 else img.shape[-3]
    height, width = img.shape[-2:]
    return [channels, height, width]


def _max_value(dtype: torch.dtype) -> int:
    if dtype == torch.uint8:
        return 255
    elif dtype == torch.int8:
        return 127
    elif dtype == torch.int16:
        return 32767
    elif dtype == torch.uint16:
        return 65535
    elif dtype == torch.int32:
        return 2147483647
    elif dtype == torch.int64:
        return 9223372036854775807
    else:
        # This is only here for completeness. This value is implicitly assumed in a lot of places so changing it is not
        # easy.
        return 1


def _assert_channels(img: Tensor, permitted: list[int]) -> None:
    c = get_dimensions(img)[0]
    if c not in permitted:
        raise TypeError(f"Input image tensor permitted channel values are {permitted}, but found {c}")


def _blend(img1: Tensor, img2: Tensor, ratio: float) -> Tensor:
    ratio = float(ratio)
    bound = _max_value(img1.dtype)
    return (ratio * img1 + (1.0 - ratio) * img2).clamp(0, bound).to(img1.dtype)


def adjust_brightness(img: Tensor, brightness_factor: float) -> Tensor:
    if brightness_factor < 0:
        raise ValueError(f"brightness_factor ({brightness_factor}) is not non-negative.")

    _assert_image_tensor(img)

    _assert_channels(img, [1, 3])

    return _blend(img, torch.zeros_like(img), brightness_factor)


def hflip(img: Tensor) -> Tensor:
    _assert_image_tensor(img)

    return img.flip(-1)


class HFlip(torch.nn.Module):
    def forward(self, img):
        return hflip(img)


class Brightness(torch.nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, img):
        return adjust_brightness(img, self.factor)


class RandomTransforms:
    """Base class for a list of transformations with randomness

    Args:
        transforms (sequence): list of transformations
    """

    def __init__(self, transforms):
        _log_api_usage_once(self)
        if not isinstance(transforms, Sequence):
            raise TypeError("Argument transforms should be a sequence")
        self.transforms = transforms

    def __call__(self, *args, **kwargs):
        raise NotImplementedError()


class RandomApply(torch.nn.Module):
    def __init__(self, transforms, p=0.5):
        super().__init__()
        _log_api_usage_once(self)
        self.transforms = transforms
        self.p = p

    def forward(self, img):
        if self.p < torch.rand(1):
            return img
        for t in self.transforms:
            img = t(img)
        return img


class RandomOrder(RandomTransforms):
    """Apply a list of transformations in a random order. This transform does not support torchscript."""

    def __call__(self, img):
        order = list(range(len(self.transforms)))
        random.shuffle(order)
        for i in order:
            img = self.transforms[i](img)
        return img


class RandomChoice(RandomTransforms):
    """Apply single transformation randomly picked from a list. This transform does not support torchscript."""

    def __init__(self, transforms, p=None):
        super().__init__(transforms)
        if p is not None and not isinstance(p, Sequence):
            raise TypeError("Argument p should be a sequence")
        self.p = p

    def __call__(self, *args):
        t = random.choices(self.transforms, weights=self.p)[0]
        return t(*args)


def build_augment():
    always = RandomApply(torch.nn.ModuleList([Brightness(0.5)]), p=1.0)
    never = RandomApply(torch.nn.ModuleList([HFlip()]), p=0.0)
    order = RandomOrder([HFlip(), Brightness(0.8)])
    choice = RandomChoice([HFlip(), Brightness(1.2)], p=[0.5, 0.5])

    def augment(img):
        img = always(img)
        img = never(img)
        img = order(img)
        return choice(img)

    return augment


augment = torch.compile(build_augment())


def make():
    torch.manual_seed(0)
    img = torch.rand(3, 4, 4)
    return build_augment(), [(img,), (img[:1],)]
