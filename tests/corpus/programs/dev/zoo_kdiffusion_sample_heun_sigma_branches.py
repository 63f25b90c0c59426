"""k-diffusion Heun sampler: the churn window `s_tmin <= sigmas[i] <= s_tmax` and the last-step test `sigmas[i + 1] == 0` branch on tensor values each step.

Source: crowsonkb/k-diffusion@4601bf085320592473f681a62808ed873d17fad5:k_diffusion/sampling.py:13-23,44-46,148-174
Also: k_diffusion/layers.py:44-97 (Denoiser preconditioner), k_diffusion/utils.py:43-48 (append_dims).
Kept: get_sigmas_karras/append_zero, to_d, sample_heun as written (extra_args,
callback, churn), the Denoiser's get_scalings/forward around an inner model.
Simplified: `trange(..., disable=disable)` is a plain range (no tqdm), the
inner model is a 1x1 conv with a sigma embedding, 4 Karras steps on 2x2x4x4.
"""
import torch
from torch import nn


def append_dims(x, target_dims):
    """Appends dimensions to the end of a tensor until it has target_dims dimensions."""
    dims_to_append = target_dims - x.ndim
    if dims_to_append < 0:
        raise ValueError(f'input has {x.ndim} dims but target_dims is {target_dims}, which is less')
    return x[(...,) + (None,) * dims_to_append]


def append_zero(x):
    return torch.cat([x, x.new_zeros([1])])


def get_sigmas_karras(n, sigma_min, sigma_max, rho=7., device='cpu'):
    """Constructs the noise schedule of Karras et al. (2022)."""
    ramp = torch.linspace(0, 1, n)
    min_inv_rho = sigma_min ** (1 / rho)
    max_inv_rho = sigma_max ** (1 / rho)
    sigmas = (max_inv_rho + ramp * (min_inv_rho - max_inv_rho)) ** rho
    return append_zero(sigmas).to(device)


def to_d(x, sigma, denoised):
    """Converts a denoiser output to a Karras ODE derivative."""
    return (x - denoised) / append_dims(sigma, x.ndim)


class Denoiser(nn.Module):
    """A Karras et al. preconditioner for denoising diffusion models."""

    def __init__(self, inner_model, sigma_data=1.):
        super().__init__()
        self.inner_model = inner_model
        self.sigma_data = sigma_data

    def get_scalings(self, sigma):
        c_skip = self.sigma_data ** 2 / (sigma ** 2 + self.sigma_data ** 2)
        c_out = sigma * self.sigma_data / (sigma ** 2 + self.sigma_data ** 2) ** 0.5
        c_in = 1 / (sigma ** 2 + self.sigma_data ** 2) ** 0.5
        return c_skip, c_out, c_in

    def forward(self, input, sigma, **kwargs):
        c_skip, c_out, c_in = [append_dims(x, input.ndim) for x in self.get_scalings(sigma)]
        return self.inner_model(input * c_in, sigma, **kwargs) * c_out + input * c_skip


class TinyUNet(nn.Module):
    def __init__(self, channels=2):
        super().__init__()
        self.proj = nn.Conv2d(channels, channels, 1)
        self.mapping = nn.Linear(1, channels)

    def forward(self, x, sigma):
        c_noise = sigma.log() / 4
        cond = self.mapping(c_noise[:, None])
        return self.proj(x) + cond[:, :, None, None]


@torch.no_grad()
def sample_heun(model, x, sigmas, extra_args=None, callback=None, disable=None, s_churn=0., s_tmin=0., s_tmax=float('inf'), s_noise=1.):
    """Implements Algorithm 2 (Heun steps) from Karras et al. (2022)."""
    extra_args = {} if extra_args is None else extra_args
    s_in = x.new_ones([x.shape[0]])
    for i in range(len(sigmas) - 1):
        gamma = min(s_churn / (len(sigmas) - 1), 2 ** 0.5 - 1) if s_tmin <= sigmas[i] <= s_tmax else 0.
        eps = torch.randn_like(x) * s_noise
        sigma_hat = sigmas[i] * (gamma + 1)
        if gamma > 0:
            x = x + eps * (sigma_hat ** 2 - sigmas[i] ** 2) ** 0.5
        denoised = model(x, sigma_hat * s_in, **extra_args)
        d = to_d(x, sigma_hat, denoised)
        if callback is not None:
            callback({'x': x, 'i': i, 'sigma': sigmas[i], 'sigma_hat': sigma_hat, 'denoised': denoised})
        dt = sigmas[i + 1] - sigma_hat
        if sigmas[i + 1] == 0:
            # Euler method
            x = x + d * dt
        else:
            # Heun's method
            x_2 = x + d * dt
            denoised_2 = model(x_2, sigmas[i + 1] * s_in, **extra_args)
            d_2 = to_d(x_2, sigmas[i + 1], denoised_2)
            d_prime = (d + d_2) / 2
            x = x + d_prime * dt
    return x


def build_sampler(model, s_churn=0.):
    def sample_fn(x, sigmas):
        return sample_heun(model, x, sigmas, disable=True, s_churn=s_churn, s_tmin=0.05, s_tmax=10.)
    return torch.compile(sample_fn)


def make():
    torch.manual_seed(0)
    model = Denoiser(TinyUNet()).eval()
    sigmas = get_sigmas_karras(4, 0.01, 80.)
    x = torch.randn(2, 2, 4, 4) * sigmas[0]
    churn = build_sampler(model, s_churn=2.)
    return churn._torchdynamo_orig_callable, [(x, sigmas), (x * 0.5, get_sigmas_karras(3, 0.02, 5.))]
