"""torchvision RandomCrop (v1): pad_if_needed on shape ints, then get_params' `torch.randint(...).item()` offsets.

Source: pytorch/vision@v0.29.2:torchvision/transforms/transforms.py:634-691
Kept: get_params (get_dimensions, the larger-than-input ValueError, the
full-size early return, two `.item()` randint draws) and forward (optional
padding, the two pad_if_needed branches, crop).
Simplified: F.pad / F.crop are constant torch.nn.functional.pad and slicing;
crop 4x4.
"""
import torch
import torch.nn.functional as F


def get_dimensions(img):
    return [img.shape[-3], img.shape[-2], img.shape[-1]]


class RandomCrop(torch.nn.Module):
    def __init__(self, size, padding=None, pad_if_needed=False, fill=0, padding_mode="constant"):
        super().__init__()
        self.size = (size, size) if isinstance(size, int) else tuple(size)
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    @staticmethod
    def get_params(img, output_size):
        _, h, w = get_dimensions(img)
        th, tw = output_size
        if h < th or w < tw:
            raise ValueError(f"Required crop size {(th, tw)} is larger than input image size {(h, w)}")
        if w == tw and h == th:
            return 0, 0, h, w
        i = torch.randint(0, h - th + 1, size=(1,)).item()
        j = torch.randint(0, w - tw + 1, size=(1,)).item()
        return i, j, th, tw

    def forward(self, img):
        if self.padding is not None:
            img = F.pad(img, [self.padding] * 4, value=self.fill)
        _, height, width = get_dimensions(img)
        if self.pad_if_needed and width < self.size[1]:
            img = F.pad(img, [self.size[1] - width, self.size[1] - width, 0, 0], value=self.fill)
        if self.pad_if_needed and height < self.size[0]:
            img = F.pad(img, [0, 0, self.size[0] - height, self.size[0] - height], value=self.fill)
        i, j, h, w = self.get_params(img, self.size)
        return img[..., i : i + h, j : j + w]


crop = torch.compile(RandomCrop(4, pad_if_needed=True))


def make():
    torch.manual_seed(0)
    return RandomCrop(4, pad_if_needed=True), [(torch.rand(3, 6, 7),), (torch.rand(3, 4, 4),), (torch.rand(3, 3, 6),)]
