"""torchvision v2 AugMix on a uint8 batch: Dirichlet weights, a random chain depth via `.item()`, `float(magnitudes[int(torch.randint(...))])` and `if signed and torch.rand(()) <= 0.5`.

Source: pytorch/vision@v0.29.1:torchvision/transforms/v2/_auto_augment.py:20-43,88-175,518-645; torchvision/transforms/v2/functional/_color.py:31-52,92-128,190-211,460-507
Kept: AugMix's constructor (severity check), _sample_dirichlet, forward (batch
reshaping, Beta via a 2-parameter Dirichlet, combined weights, the
mixture_width/chain_depth loops, _get_random_item's
`keys[int(torch.randint(len(keys), ()))]`, magnitude sampling and sign flip,
`mix.add_`), the augmentation-space dicts of lambdas, and the
_apply_image_or_video_transform dispatch for the ops kept, with their v2
kernels (brightness, contrast via grayscale and _blend, posterize, solarize via
invert).
Simplified: the geometric ops (shear/translate/rotate), autocontrast and
equalize are left out of the space; inputs are plain uint8 tensors (no
tv_tensors, PIL, or pytree flattening); _max_value keeps its uint8 and default
cases.
"""
from typing import Any

import torch
from torch import nn


def _max_value(dtype: torch.dtype) -> int:
    if dtype == torch.uint8:
        return 255
    else:
        return 1


def _num_value_bits(dtype: torch.dtype) -> int:
    if dtype == torch.uint8:
        return 8
    raise TypeError(f"Number of value bits is only defined for integer dtypes, but got {dtype}.")


def _rgb_to_grayscale_image(image: torch.Tensor, num_output_channels: int = 1, preserve_dtype: bool = True):
    if image.shape[-3] == 1 and num_output_channels == 1:
        return image.clone()
    r, g, b = image.unbind(dim=-3)
    l_img = r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114)
    l_img = l_img.unsqueeze(dim=-3)
    if preserve_dtype:
        l_img = l_img.to(image.dtype)
    return l_img


def _blend(image1: torch.Tensor, image2: torch.Tensor, ratio: float) -> torch.Tensor:
    ratio = float(ratio)
    fp = image1.is_floating_point()
    bound = _max_value(image1.dtype)
    output = image1.mul(ratio).add_(image2, alpha=(1.0 - ratio)).clamp_(0, bound)
    return output if fp else output.to(image1.dtype)


def adjust_brightness_image(image: torch.Tensor, brightness_factor: float) -> torch.Tensor:
    if brightness_factor < 0:
        raise ValueError(f"brightness_factor ({brightness_factor}) is not non-negative.")

    c = image.shape[-3]
    if c not in [1, 3]:
        raise TypeError(f"Input image tensor permitted channel values are 1 or 3, but found {c}")

    fp = image.is_floating_point()
    bound = _max_value(image.dtype)
    output = image.mul(brightness_factor).clamp_(0, bound)
    return output if fp else output.to(image.dtype)


def adjust_contrast_image(image: torch.Tensor, contrast_factor: float) -> torch.Tensor:
    if contrast_factor < 0:
        raise ValueError(f"contrast_factor ({contrast_factor}) is not non-negative.")

    c = image.shape[-3]
    if c not in [1, 3]:
        raise TypeError(f"Input image tensor permitted channel values are 1 or 3, but found {c}")
    fp = image.is_floating_point()
    if c == 3:
        grayscale_image = _rgb_to_grayscale_image(image, num_output_channels=1, preserve_dtype=False)
        if not fp:
            grayscale_image = grayscale_image.floor_()
    else:
        grayscale_image = image if fp else image.to(torch.float32)
    mean = torch.mean(grayscale_image, dim=(-3, -2, -1), keepdim=True)
    return _blend(image, mean, contrast_factor)


def posterize_image(image: torch.Tensor, bits: int) -> torch.Tensor:
    if not isinstance(bits, int) or not 0 <= bits <= 8:
        raise TypeError(f"bits must be a positive integer in the range [0, 8], got {bits} instead.")

    if image.is_floating_point():
        levels = 1 << bits
        return image.mul(levels).floor_().clamp_(0, levels - 1).mul_(1.0 / levels)
    else:
        num_value_bits = _num_value_bits(image.dtype)
        if bits >= num_value_bits:
            return image

        mask = ((1 << bits) - 1) << (num_value_bits - bits)
        return image & mask


def invert_image(image: torch.Tensor) -> torch.Tensor:
    if image.is_floating_point():
        return 1.0 - image
    elif image.dtype == torch.uint8:
        return image.bitwise_not()
    else:  # signed integer dtypes
        # We can't use `Tensor.bitwise_not` here, since we want to retain the leading zero bit that encodes the sign
        return image.bitwise_xor((1 << _num_value_bits(image.dtype)) - 1)


def solarize_image(image: torch.Tensor, threshold: float) -> torch.Tensor:
    if threshold > _max_value(image.dtype):
        raise TypeError(f"Threshold should be less or equal the maximum value of the dtype, but got {threshold}")

    return torch.where(image >= threshold, invert_image(image), image)


class _AutoAugmentBase(nn.Module):
    def __init__(self, *, interpolation="nearest", fill=None) -> None:
        super().__init__()
        self.interpolation = interpolation
        self.fill = fill

    def _get_random_item(self, dct: dict) -> tuple:
        keys = tuple(dct.keys())
        key = keys[int(torch.randint(len(keys), ()))]
        return key, dct[key]

    def _apply_image_or_video_transform(self, image, transform_id: str, magnitude: float, interpolation, fill):
        if transform_id == "Identity":
            return image
        elif transform_id == "Brightness":
            return adjust_brightness_image(image, brightness_factor=1.0 + magnitude)
        elif transform_id == "Contrast":
            return adjust_contrast_image(image, contrast_factor=1.0 + magnitude)
        elif transform_id == "Posterize":
            return posterize_image(image, bits=int(magnitude))
        elif transform_id == "Solarize":
            bound = _max_value(image.dtype) if isinstance(image, torch.Tensor) else 255.0
            return solarize_image(image, threshold=bound * magnitude)
        else:
            raise ValueError(f"No transform available for {transform_id}")


class AugMix(_AutoAugmentBase):
    _PARTIAL_AUGMENTATION_SPACE = {
        "Posterize": (
            lambda num_bins, height, width: (4 - (torch.arange(num_bins) / ((num_bins - 1) / 4))).round().int(),
            False,
        ),
        "Solarize": (lambda num_bins, height, width: torch.linspace(1.0, 0.0, num_bins), False),
    }
    _AUGMENTATION_SPACE: dict = {
        **_PARTIAL_AUGMENTATION_SPACE,
        "Brightness": (lambda num_bins, height, width: torch.linspace(0.0, 0.9, num_bins), True),
        "Contrast": (lambda num_bins, height, width: torch.linspace(0.0, 0.9, num_bins), True),
    }

    def __init__(self, severity: int = 3, mixture_width: int = 3, chain_depth: int = -1, alpha: float = 1.0,
                 all_ops: bool = True, interpolation="bilinear", fill=None) -> None:
        super().__init__(interpolation=interpolation, fill=fill)
        self._PARAMETER_MAX = 10
        if not (1 <= severity <= self._PARAMETER_MAX):
            raise ValueError(f"The severity must be between [1, {self._PARAMETER_MAX}]. Got {severity} instead.")
        self.severity = severity
        self.mixture_width = mixture_width
        self.chain_depth = chain_depth
        self.alpha = alpha
        self.all_ops = all_ops

    def _sample_dirichlet(self, params: torch.Tensor) -> torch.Tensor:
        # Must be on a separate method so that we can overwrite it in tests.
        return torch._sample_dirichlet(params)

    def forward(self, *inputs: Any) -> Any:
        orig_image_or_video = inputs if len(inputs) > 1 else inputs[0]
        height, width = orig_image_or_video.shape[-2:]
        image_or_video = orig_image_or_video

        augmentation_space = self._AUGMENTATION_SPACE if self.all_ops else self._PARTIAL_AUGMENTATION_SPACE

        orig_dims = list(image_or_video.shape)
        expected_ndim = 4
        batch = image_or_video.reshape([1] * max(expected_ndim - image_or_video.ndim, 0) + orig_dims)
        batch_dims = [batch.size(0)] + [1] * (batch.ndim - 1)

        # Sample the beta weights for combining the original and augmented image or video. To get Beta, we use a
        # Dirichlet with 2 parameters. The 1st column stores the weights of the original and the 2nd the ones of
        # augmented image or video.
        m = self._sample_dirichlet(
            torch.tensor([self.alpha, self.alpha], device=batch.device).expand(batch_dims[0], -1)
        )

        # Sample the mixing weights and combine them with the ones sampled from Beta for the augmented images or videos.
        combined_weights = self._sample_dirichlet(
            torch.tensor([self.alpha] * self.mixture_width, device=batch.device).expand(batch_dims[0], -1)
        ) * m[:, 1].reshape([batch_dims[0], -1])

        mix = m[:, 0].reshape(batch_dims) * batch
        for i in range(self.mixture_width):
            aug = batch
            depth = self.chain_depth if self.chain_depth > 0 else int(torch.randint(low=1, high=4, size=(1,)).item())
            for _ in range(depth):
                transform_id, (magnitudes_fn, signed) = self._get_random_item(augmentation_space)

                magnitudes = magnitudes_fn(self._PARAMETER_MAX, height, width)
                if magnitudes is not None:
                    magnitude = float(magnitudes[int(torch.randint(self.severity, ()))])
                    if signed and torch.rand(()) <= 0.5:
                        magnitude *= -1
                else:
                    magnitude = 0.0

                aug = self._apply_image_or_video_transform(aug, transform_id, magnitude, interpolation=self.interpolation, fill=self.fill)
            mix.add_(combined_weights[:, i].reshape(batch_dims) * aug)
        mix = mix.reshape(orig_dims).to(dtype=image_or_video.dtype)

        return mix


augment = torch.compile(AugMix(severity=3, mixture_width=2))


def make():
    torch.manual_seed(0)
    images = torch.randint(0, 256, (2, 3, 6, 6), dtype=torch.uint8)
    return AugMix(severity=3, mixture_width=2), [(images,), (images[0],)]
