"""torchvision tensor ops autocontrast / posterize / solarize / invert: masked assignment on non-finite scales, int masks, torch.where (no break).

Source: pytorch/vision@v0.29.2:torchvision/transforms/_functional_tensor.py:9-63,258-261,767-860
Kept: _max_value, _assert_image_tensor, _assert_channels, get_dimensions and
the four ops verbatim (autocontrast's amin/amax, scale with
`minimum[eq_idxs] = 0` / `scale[eq_idxs] = 1` masked assignments; posterize's
dtype check and `-int(2 ** (8 - bits))` mask; solarize's threshold check and
torch.where; invert's bound), composed as an auto-augment style op chain.
Simplified: a uint8 3x4x4 image and a float one.
"""
import torch
from torch import Tensor


def _is_tensor_a_torch_image(x: Tensor) -> bool:
    return x.ndim >= 2


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
        return 1


def _assert_image_tensor(img: Tensor) -> None:
    if not _is_tensor_a_torch_image(img):
        raise TypeError('Tensor is not a torch image.')


def _assert_channels(img: Tensor, permitted: list[int]) -> None:
    c = get_dimensions(img)[0]
    if c not in permitted:
        raise TypeError(f'Input image tensor permitted channel values are {permitted}, but found {c}')


def get_dimensions(img: Tensor) -> list[int]:
    _assert_image_tensor(img)
    channels = 1 if img.ndim == 2 else img.shape[-3]
    height, width = img.shape[-2:]
    return [channels, height, width]


def autocontrast(img: Tensor) -> Tensor:
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f'Input image tensor should have at least 3 dimensions, but found {img.ndim}')
    _assert_channels(img, [1, 3])
    bound = _max_value(img.dtype)
    dtype = img.dtype if torch.is_floating_point(img) else torch.float32
    minimum = img.amin(dim=(-2, -1), keepdim=True).to(dtype)
    maximum = img.amax(dim=(-2, -1), keepdim=True).to(dtype)
    scale = bound / (maximum - minimum)
    eq_idxs = torch.isfinite(scale).logical_not()
    minimum[eq_idxs] = 0
    scale[eq_idxs] = 1
    return ((img - minimum) * scale).clamp(0, bound).to(img.dtype)


def posterize(img: Tensor, bits: int) -> Tensor:
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f'Input image tensor should have at least 3 dimensions, but found {img.ndim}')
    if img.dtype != torch.uint8:
        raise TypeError(f'Only torch.uint8 image tensors are supported, but found {img.dtype}')
    _assert_channels(img, [1, 3])
    mask = -int(2 ** (8 - bits))
    return img & mask


def solarize(img: Tensor, threshold: float) -> Tensor:
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f'Input image tensor should have at least 3 dimensions, but found {img.ndim}')
    _assert_channels(img, [1, 3])
    if threshold > _max_value(img.dtype):
        raise TypeError('Threshold should be less than bound of img.')
    inverted_img = invert(img)
    return torch.where(img >= threshold, inverted_img, img)


def invert(img: Tensor) -> Tensor:
    _assert_image_tensor(img)
    if img.ndim < 3:
        raise TypeError(f'Input image tensor should have at least 3 dimensions, but found {img.ndim}')
    _assert_channels(img, [1, 3])
    return _max_value(img.dtype) - img


def _blend(img1: Tensor, img2: Tensor, ratio: float) -> Tensor:
    ratio = float(ratio)
    bound = _max_value(img1.dtype)
    return (ratio * img1 + (1.0 - ratio) * img2).clamp(0, bound).to(img1.dtype)



def ops(img_u8, img_f):
    a = posterize(img_u8, 3)
    b = solarize(img_f, 0.5)
    c = autocontrast(img_f)
    return a, b, invert(c)


compiled_ops = torch.compile(ops, dynamic=False)


def make():
    torch.manual_seed(0)
    flat = torch.full((3, 4, 4), 0.25)
    return ops, [(torch.randint(0, 256, (3, 4, 4), dtype=torch.uint8), torch.rand(3, 4, 4)), (torch.randint(0, 256, (3, 4, 4), dtype=torch.uint8), flat)]
