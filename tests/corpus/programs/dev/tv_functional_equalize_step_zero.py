"""torchvision equalize: bool-mask read `hist[hist != 0]` and `if step == 0:` on a tensor, per channel.

Source: pytorch/vision@v0.29.2:torchvision/transforms/_functional_tensor.py:863-902
Kept: `_scale_channel` (bincount branch on CPU, the nonzero-hist read, the
step==0 early return, the LUT), `_equalize_single_image` and `equalize`'s checks.
Simplified: _assert_image_tensor/_assert_channels dropped; a 3x6x6 image.
"""
import torch
from torch import Tensor


def _scale_channel(img_chan: Tensor) -> Tensor:
    if img_chan.is_cuda:
        hist = torch.histc(img_chan.to(torch.float32), bins=256, min=0, max=255)
    else:
        hist = torch.bincount(img_chan.reshape(-1), minlength=256)

    nonzero_hist = hist[hist != 0]
    step = torch.div(nonzero_hist[:-1].sum(), 255, rounding_mode="floor")
    if step == 0:
        return img_chan

    lut = torch.div(torch.cumsum(hist, 0) + torch.div(step, 2, rounding_mode="floor"), step, rounding_mode="floor")
    lut = torch.nn.functional.pad(lut, [1, 0])[:-1].clamp(0, 255)
    return lut[img_chan.to(torch.int64)].to(torch.uint8)


def _equalize_single_image(img: Tensor) -> Tensor:
    return torch.stack([_scale_channel(img[c]) for c in range(img.size(0))])


def equalize(img: Tensor) -> Tensor:
    if not (3 <= img.ndim <= 4):
        raise TypeError(f"Input image tensor should have 3 or 4 dimensions, but found {img.ndim}")
    if img.dtype != torch.uint8:
        raise TypeError(f"Only torch.uint8 image tensors are supported, but found {img.dtype}")
    if img.ndim == 3:
        return _equalize_single_image(img)
    return torch.stack([_equalize_single_image(x) for x in img])


equalize_compiled = torch.compile(equalize)


def make():
    torch.manual_seed(0)
    varied = torch.randint(0, 256, (3, 6, 6), dtype=torch.uint8)
    flat = torch.full((3, 6, 6), 7, dtype=torch.uint8)
    return equalize, [(varied,), (flat,)]
