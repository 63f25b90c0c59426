"""torchaudio FrequencyMasking/TimeMasking (SpecAugment): mask_along_axis raises if `mask_end - mask_start >= mask_param` (tensor condition).

Source: pytorch/audio@v2.11.0:src/torchaudio/functional/functional.py:806-958; src/torchaudio/transforms/_transforms.py:1170-1287
Kept: _AxisMasking with the iid_masks switch and float(mask_value) for tensor
values, mask_along_axis_iid (rand start/length, broadcast mask, masked_fill /
torch.where), mask_along_axis (the dim/axis/p checks, _get_mask_param, packing
the batch, rand value/min_value, the tensor-condition ValueError, masked_fill),
FrequencyMasking and TimeMasking subclasses in a SpecAugment-style nn.Sequential.
Simplified: specgram 2x1x8x10.
"""
from typing import Union

import torch
from torch import Tensor


def _get_mask_param(mask_param: int, p: float, axis_length: int) -> int:
    if p == 1.0:
        return mask_param
    else:
        return min(mask_param, int(axis_length * p))


def mask_along_axis_iid(specgrams: Tensor, mask_param: int, mask_value: Union[float, Tensor], axis: int, p: float = 1.0) -> Tensor:
    dim = specgrams.dim()
    if dim < 3:
        raise ValueError(f"Spectrogram must have at least three dimensions ({dim} given).")
    if axis not in [dim - 2, dim - 1]:
        raise ValueError(f"Only Frequency and Time masking are supported (axis {dim - 2} and axis {dim - 1} supported; {axis} given).")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"The value of p must be between 0.0 and 1.0 ({p} given).")
    mask_param = _get_mask_param(mask_param, p, specgrams.shape[axis])
    if mask_param < 1:
        return specgrams
    device = specgrams.device
    dtype = specgrams.dtype
    value = torch.rand(specgrams.shape[: (dim - 2)], device=device, dtype=dtype) * mask_param
    min_value = torch.rand(specgrams.shape[: (dim - 2)], device=device, dtype=dtype) * (specgrams.size(axis) - value)
    mask_start = min_value.long()[..., None, None]
    mask_end = (min_value.long() + value.long())[..., None, None]
    mask = torch.arange(0, specgrams.size(axis), device=device, dtype=dtype)
    specgrams = specgrams.transpose(axis, -1)
    specgrams = (
        torch.where((mask >= mask_start) & (mask < mask_end), mask_value.repeat(specgrams.shape), specgrams)
        if isinstance(mask_value, Tensor)
        else specgrams.masked_fill((mask >= mask_start) & (mask < mask_end), mask_value)
    )
    return specgrams.transpose(axis, -1)


def mask_along_axis(specgram: Tensor, mask_param: int, mask_value: float, axis: int, p: float = 1.0) -> Tensor:
    dim = specgram.dim()
    if dim < 2:
        raise ValueError(f"Spectrogram must have at least two dimensions (time and frequency) ({dim} given).")
    if axis not in [dim - 2, dim - 1]:
        raise ValueError(f"Only Frequency and Time masking are supported (axis {dim - 2} and axis {dim - 1} supported; {axis} given).")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"The value of p must be between 0.0 and 1.0 ({p} given).")
    mask_param = _get_mask_param(mask_param, p, specgram.shape[axis])
    if mask_param < 1:
        return specgram
    shape = specgram.size()
    specgram = specgram.reshape([-1] + list(shape[-2:]))
    value = torch.rand(1) * mask_param
    min_value = torch.rand(1) * (specgram.size(axis - dim + 3) - value)
    mask_start = (min_value.long()).squeeze()
    mask_end = (min_value.long() + value.long()).squeeze()
    mask = torch.arange(0, specgram.shape[axis - dim + 3], device=specgram.device, dtype=specgram.dtype)
    mask = (mask >= mask_start) & (mask < mask_end)
    if axis == dim - 2:
        mask = mask.unsqueeze(-1)
    if mask_end - mask_start >= mask_param:
        raise ValueError("Number of columns to be masked should be less than mask_param")
    specgram = specgram.masked_fill(mask, mask_value)
    specgram = specgram.reshape(shape[:-2] + specgram.shape[-2:])
    return specgram


class _AxisMasking(torch.nn.Module):
    __constants__ = ["mask_param", "axis", "iid_masks", "p"]

    def __init__(self, mask_param: int, axis: int, iid_masks: bool, p: float = 1.0) -> None:
        super().__init__()
        self.mask_param = mask_param
        self.axis = axis
        self.iid_masks = iid_masks
        self.p = p

    def forward(self, specgram: Tensor, mask_value: Union[float, torch.Tensor] = 0.0) -> Tensor:
        if self.iid_masks:
            return mask_along_axis_iid(specgram, self.mask_param, mask_value, self.axis + specgram.dim() - 3, p=self.p)
        else:
            mask_value_ = float(mask_value) if isinstance(mask_value, Tensor) else mask_value
            return mask_along_axis(specgram, self.mask_param, mask_value_, self.axis + specgram.dim() - 3, p=self.p)


class FrequencyMasking(_AxisMasking):
    def __init__(self, freq_mask_param: int, iid_masks: bool = False) -> None:
        super().__init__(freq_mask_param, 1, iid_masks)


class TimeMasking(_AxisMasking):
    def __init__(self, time_mask_param: int, iid_masks: bool = False, p: float = 1.0) -> None:
        super().__init__(time_mask_param, 2, iid_masks, p=p)


spec_augment = torch.nn.Sequential(FrequencyMasking(freq_mask_param=3), TimeMasking(time_mask_param=4, iid_masks=True))
spec_augment = torch.compile(spec_augment)


def make():
    torch.manual_seed(0)
    return torch.nn.Sequential(FrequencyMasking(freq_mask_param=3), TimeMasking(time_mask_param=4, iid_masks=True)), [(torch.randn(2, 1, 8, 10),)]
