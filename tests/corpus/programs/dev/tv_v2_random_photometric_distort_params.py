"""torchvision.transforms.v2 RandomPhotometricDistort on a batch: `.item()` factors drawn under `torch.rand(1) < self.p`, `bool(torch.rand(()) < 0.5)`, an optional randperm channel permutation.

Source: pytorch/vision@02526afc62:torchvision/transforms/v2/_color.py:ColorJitter._generate_value,RandomPhotometricDistort
Kept: ColorJitter._generate_value (`torch.empty(1).uniform_(...).item()`),
RandomPhotometricDistort.__init__/_get_params (dict comprehension with the
`if torch.rand(1) < self.p else None` choice per factor, contrast_before,
channel_permutation) and _transform (the None / contrast_before chain
through _call_kernel); query_chw; the Transform forward (params once, then
each input).
Simplified: Transform's pytree flattening and tv_tensors dispatch reduced to
a list of plain tensors; the kernels of v2/functional/_color.py
(adjust_brightness/contrast/saturation/hue, permute_channels, _blend,
_rgb_to_hsv/_hsv_to_rgb) are inlined for float images only.
"""
from typing import Any, Dict, List, Tuple

import torch
from torch import nn


def _max_value(dtype):
    if dtype == torch.uint8:
        return 255
    return 1.0


def _rgb_to_grayscale_image(image, num_output_channels=1, preserve_dtype=True):
    r, g, b = image.unbind(dim=-3)
    l_img = r.mul(0.2989).add_(g, alpha=0.587).add_(b, alpha=0.114)
    l_img = l_img.unsqueeze(dim=-3)
    if preserve_dtype:
        l_img = l_img.to(image.dtype)
    if num_output_channels == 3:
        l_img = l_img.expand(image.shape)
    return l_img


def _blend(image1, image2, ratio):
    fp = image1.is_floating_point()
    bound = _max_value(image1.dtype)
    output = image1.mul(ratio).add_(image2.mul(1.0 - ratio)).clamp_(0, bound)
    return output if fp else output.to(image1.dtype)


def adjust_brightness(image, brightness_factor):
    if brightness_factor < 0:
        raise ValueError(f"brightness_factor ({brightness_factor}) is not non-negative.")
    fp = image.is_floating_point()
    bound = _max_value(image.dtype)
    output = image.mul(brightness_factor).clamp_(0, bound)
    return output if fp else output.to(image.dtype)


def adjust_saturation(image, saturation_factor):
    if saturation_factor < 0:
        raise ValueError(f"saturation_factor ({saturation_factor}) is not non-negative.")
    c = image.shape[-3]
    if c not in [1, 3]:
        raise TypeError(f"Input image tensor permitted channel values are 1 or 3, but found {c}")
    if c == 1:  # Match PIL behaviour
        return image
    grayscale_image = _rgb_to_grayscale_image(image, num_output_channels=1, preserve_dtype=False)
    if not image.is_floating_point():
        grayscale_image = grayscale_image.floor_()
    return _blend(image, grayscale_image, saturation_factor)


def adjust_contrast(image, contrast_factor):
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


def _rgb_to_hsv(image):
    r, g, _ = image.unbind(dim=-3)
    minc, maxc = torch.aminmax(image, dim=-3)
    eqc = maxc == minc
    channels_range = maxc - minc
    ones = torch.ones_like(maxc)
    s = channels_range / torch.where(eqc, ones, maxc)
    channels_range_divisor = torch.where(eqc, ones, channels_range).unsqueeze_(dim=-3)
    rc, gc, bc = ((maxc.unsqueeze(dim=-3) - image) / channels_range_divisor).unbind(dim=-3)
    mask_maxc_neq_r = maxc != r
    mask_maxc_eq_g = maxc == g
    hg = rc.add(2.0).sub_(bc).mul_(mask_maxc_eq_g & mask_maxc_neq_r)
    hr = bc.sub_(gc).mul_(~mask_maxc_neq_r)
    hb = gc.add_(4.0).sub_(rc).mul_(mask_maxc_neq_r.logical_and_(mask_maxc_eq_g.logical_not_()))
    h = hr.add_(hg).add_(hb)
    h = h.mul_(1.0 / 6.0).add_(1.0).fmod_(1.0)
    return torch.stack((h, s, maxc), dim=-3)


def _hsv_to_rgb(img):
    h, s, v = img.unbind(dim=-3)
    h6 = h.mul(6)
    i = torch.floor(h6)
    f = h6.sub_(i)
    i = i.to(dtype=torch.int32)
    sxv = s.mul(v)
    w = v.sub(sxv)
    q = v.sub(sxv.mul(f))
    t = sxv.mul_(f).add_(w)
    mask = i.remainder_(6).unsqueeze(dim=-3) == torch.arange(6, device=i.device).view(-1, 1, 1)
    a1 = torch.stack((v, q, w, w, t, v), dim=-3)
    a2 = torch.stack((t, v, v, q, w, w), dim=-3)
    a3 = torch.stack((w, w, t, v, v, q), dim=-3)
    a4 = torch.stack((a1, a2, a3), dim=-4)
    return (a4.mul_(mask.unsqueeze(dim=-4))).sum(dim=-3)


def adjust_hue(image, hue_factor):
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    c = image.shape[-3]
    if c not in [1, 3]:
        raise TypeError(f"Input image tensor permitted channel values are 1 or 3, but found {c}")
    if c == 1:  # Match PIL behaviour
        return image
    if image.numel() == 0:
        # exit earlier on empty images
        return image
    image = _rgb_to_hsv(image)
    h, s, v = image.unbind(dim=-3)
    h.add_(hue_factor).remainder_(1.0)
    image = torch.stack((h, s, v), dim=-3)
    return _hsv_to_rgb(image)


def permute_channels(image, permutation):
    shape = image.shape
    num_channels, height, width = shape[-3:]
    image = image.reshape(-1, num_channels, height, width)
    image = image[:, permutation, :, :]
    return image.reshape(shape)


def query_chw(flat_inputs):
    chws = {tuple(inpt.shape[-3:]) for inpt in flat_inputs if isinstance(inpt, torch.Tensor)}
    if not chws:
        raise TypeError("No image or video was found in the sample")
    elif len(chws) > 1:
        raise ValueError(f"Found multiple CxHxW dimensions in the sample: {sorted(chws)}")
    c, h, w = chws.pop()
    return c, h, w


class F:
    adjust_brightness = staticmethod(adjust_brightness)
    adjust_contrast = staticmethod(adjust_contrast)
    adjust_saturation = staticmethod(adjust_saturation)
    adjust_hue = staticmethod(adjust_hue)
    permute_channels = staticmethod(permute_channels)


class Transform(nn.Module):
    def _get_params(self, flat_inputs):
        return dict()

    def _call_kernel(self, functional, inpt, *args, **kwargs):
        return functional(inpt, *args, **kwargs)

    def forward(self, *inputs):
        flat_inputs = list(inputs)
        params = self._get_params(flat_inputs)
        flat_outputs = [self._transform(inpt, params) for inpt in flat_inputs]
        return flat_outputs[0] if len(flat_outputs) == 1 else tuple(flat_outputs)


class ColorJitter(Transform):
    @staticmethod
    def _generate_value(left: float, right: float) -> float:
        return torch.empty(1).uniform_(left, right).item()


class RandomPhotometricDistort(Transform):
    def __init__(
        self,
        brightness: Tuple[float, float] = (0.875, 1.125),
        contrast: Tuple[float, float] = (0.5, 1.5),
        saturation: Tuple[float, float] = (0.5, 1.5),
        hue: Tuple[float, float] = (-0.05, 0.05),
        p: float = 0.5,
    ):
        super().__init__()
        self.brightness = brightness
        self.contrast = contrast
        self.hue = hue
        self.saturation = saturation
        self.p = p

    def _get_params(self, flat_inputs: List[Any]) -> Dict[str, Any]:
        num_channels, *_ = query_chw(flat_inputs)
        params: Dict[str, Any] = {
            key: ColorJitter._generate_value(range[0], range[1]) if torch.rand(1) < self.p else None
            for key, range in [
                ("brightness_factor", self.brightness),
                ("contrast_factor", self.contrast),
                ("saturation_factor", self.saturation),
                ("hue_factor", self.hue),
            ]
        }
        params["contrast_before"] = bool(torch.rand(()) < 0.5)
        params["channel_permutation"] = torch.randperm(num_channels) if torch.rand(1) < self.p else None
        return params

    def _transform(self, inpt: Any, params: Dict[str, Any]) -> Any:
        if params["brightness_factor"] is not None:
            inpt = self._call_kernel(F.adjust_brightness, inpt, brightness_factor=params["brightness_factor"])
        if params["contrast_factor"] is not None and params["contrast_before"]:
            inpt = self._call_kernel(F.adjust_contrast, inpt, contrast_factor=params["contrast_factor"])
        if params["saturation_factor"] is not None:
            inpt = self._call_kernel(F.adjust_saturation, inpt, saturation_factor=params["saturation_factor"])
        if params["hue_factor"] is not None:
            inpt = self._call_kernel(F.adjust_hue, inpt, hue_factor=params["hue_factor"])
        if params["contrast_factor"] is not None and not params["contrast_before"]:
            inpt = self._call_kernel(F.adjust_contrast, inpt, contrast_factor=params["contrast_factor"])
        if params["channel_permutation"] is not None:
            inpt = self._call_kernel(F.permute_channels, inpt, permutation=params["channel_permutation"])
        return inpt


gpu_augment = torch.compile(RandomPhotometricDistort(p=0.5))


def make():
    torch.manual_seed(0)
    images = torch.rand(4, 3, 8, 8)
    return RandomPhotometricDistort(p=0.5), [(images,), (images[:2], torch.rand(2, 3, 8, 8))]
