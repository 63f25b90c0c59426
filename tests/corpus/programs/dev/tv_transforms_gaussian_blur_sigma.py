"""torchvision GaussianBlur (v1): sigma drawn with `torch.empty(1).uniform_(...).item()`, kernel built from it.

Source: pytorch/vision@v0.29.2:torchvision/transforms/transforms.py:1770-1820; torchvision/transforms/_functional_tensor.py:_get_gaussian_kernel1d,_get_gaussian_kernel2d,gaussian_blur
Kept: get_params / forward, _get_gaussian_kernel1d (linspace, exp, normalise),
the 2-D outer product, and gaussian_blur's reflect pad + depthwise conv2d.
Simplified: kernel 3x3, sigma (0.1, 2.0), 3x6x6 image.
"""
import torch
import torch.nn.functional as F
from torch import nn


def _get_gaussian_kernel1d(kernel_size: int, sigma: float, dtype, device):
    ksize_half = (kernel_size - 1) * 0.5
    x = torch.linspace(-ksize_half, ksize_half, steps=kernel_size, dtype=dtype, device=device)
    pdf = torch.exp(-0.5 * (x / sigma).pow(2))
    return pdf / pdf.sum()


def _get_gaussian_kernel2d(kernel_size, sigma, dtype, device):
    kernel1d_x = _get_gaussian_kernel1d(kernel_size[0], sigma[0], dtype, device)[:, None]
    kernel1d_y = _get_gaussian_kernel1d(kernel_size[1], sigma[1], dtype, device)[None, :]
    return kernel1d_y * kernel1d_x


def gaussian_blur(img, kernel_size, sigma):
    kernel = _get_gaussian_kernel2d(kernel_size, sigma, dtype=img.dtype, device=img.device)
    kernel = kernel.expand(img.shape[-3], 1, kernel.shape[0], kernel.shape[1])
    padding = [kernel_size[0] // 2, kernel_size[0] // 2, kernel_size[1] // 2, kernel_size[1] // 2]
    img = F.pad(img[None], padding, mode="reflect")
    return F.conv2d(img, kernel, groups=img.shape[-3])[0]


class GaussianBlur(nn.Module):
    def __init__(self, kernel_size=(3, 3), sigma=(0.1, 2.0)):
        super().__init__()
        self.kernel_size = kernel_size
        self.sigma = sigma

    @staticmethod
    def get_params(sigma_min: float, sigma_max: float) -> float:
        return torch.empty(1).uniform_(sigma_min, sigma_max).item()

    def forward(self, img):
        sigma = self.get_params(self.sigma[0], self.sigma[1])
        return gaussian_blur(img, self.kernel_size, [sigma, sigma])


blur = torch.compile(GaussianBlur())


def make():
    torch.manual_seed(0)
    return GaussianBlur(), [(torch.rand(3, 6, 6),)]
