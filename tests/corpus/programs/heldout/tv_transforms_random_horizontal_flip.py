"""torchvision RandomHorizontalFlip / RandomApply (v1): `if torch.rand(1) < self.p:` branches on a fresh random tensor.

Source: pytorch/vision@v0.29.2:torchvision/transforms/transforms.py:520-549,690-722
Kept: RandomHorizontalFlip.forward and RandomApply.forward verbatim
(`self.p < torch.rand(1)` early return, the loop over transforms), composed
with Normalize the way GPU augmentation pipelines compile them; F.hflip is
`img.flip(-1)` as in _functional_tensor.hflip.
Simplified: a 3x4x4 image; one transform inside RandomApply.
"""
import torch
from torch import nn


def hflip(img):
    return img.flip(-1)


class RandomHorizontalFlip(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        if torch.rand(1) < self.p:
            return hflip(img)
        return img


class Normalize(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean)[:, None, None])
        self.register_buffer("std", torch.tensor(std)[:, None, None])

    def forward(self, img):
        return (img - self.mean) / self.std


class RandomApply(nn.Module):
    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, img):
        if self.p < torch.rand(1):
            return img
        for t in self.transforms:
            img = t(img)
        return img


augment = nn.Sequential(RandomHorizontalFlip(0.5), RandomApply(nn.ModuleList([Normalize([0.5] * 3, [0.25] * 3)]), p=0.5))
augment = torch.compile(augment)


def make():
    torch.manual_seed(0)
    pipeline = nn.Sequential(RandomHorizontalFlip(0.5), RandomApply(nn.ModuleList([Normalize([0.5] * 3, [0.25] * 3)]), p=0.5))
    return pipeline, [(torch.rand(3, 4, 4),)]
