"""torchvision RandomInvert / RandomPosterize (v1): `if torch.rand(1).item() < self.p:` converts the draw to a Python float.

Source: pytorch/vision@v0.29.2:torchvision/transforms/transforms.py:1859-1920; torchvision/transforms/_functional_tensor.py:767-790
Kept: both modules' forward verbatim and the functional invert (bound from
dtype) / posterize (uint8 check, -int(2 ** (8 - bits)) mask), chained as a
uint8 augmentation.
Simplified: _log_api_usage_once dropped; a 3x4x4 uint8 image.
"""
import torch


def _max_value(dtype):
    if dtype == torch.uint8:
        return 255
    return 1


def invert(img):
    if img.ndim < 3:
        raise TypeError(f"Input image tensor should have at least 3 dimensions, but found {img.ndim}")
    return _max_value(img.dtype) - img


def posterize(img, bits: int):
    if img.dtype != torch.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    mask = -int(2 ** (8 - bits))
    return img & mask


class RandomInvert(torch.nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        if torch.rand(1).item() < self.p:
            return invert(img)
        return img


class RandomPosterize(torch.nn.Module):
    def __init__(self, bits, p=0.5):
        super().__init__()
        self.bits = bits
        self.p = p

    def forward(self, img):
        if torch.rand(1).item() < self.p:
            return posterize(img, self.bits)
        return img


augment = torch.nn.Sequential(RandomInvert(0.5), RandomPosterize(3, 0.5))
augment = torch.compile(augment)


def make():
    torch.manual_seed(0)
    return torch.nn.Sequential(RandomInvert(0.5), RandomPosterize(3, 0.5)), [(torch.randint(0, 256, (3, 4, 4), dtype=torch.uint8),)]
