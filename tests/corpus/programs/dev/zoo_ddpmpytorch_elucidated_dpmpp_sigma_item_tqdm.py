"""denoising-diffusion-pytorch ElucidatedDiffusion.sample_using_dpmpp (DPM++ 2M) under @torch.no_grad: tqdm over the steps, `sigmas[i].item()` handed to preconditioned_network_forward (`isinstance(sigma, float)` -> torch.full), `not exists(old_denoised) or sigmas[i + 1] == 0` tensor-valued branch, lambdas for sigma/t conversion.

Source: lucidrains/denoising-diffusion-pytorch@faed4db28e724735323fa91c70aa9b28a6e1cbac:denoising_diffusion_pytorch/elucidated_diffusion.py:1-205
Kept: exists/default/log helpers, ElucidatedDiffusion.__init__ (assert on
net.random_or_learned_sinusoidal_cond), device property, c_skip/c_out/c_in/
c_noise, preconditioned_network_forward, sample_schedule and
sample_using_dpmpp verbatim. The sampler is compiled as
`diffusion.sample_using_dpmpp = torch.compile(diffusion.sample_using_dpmpp)`.
Simplified: the Unet is a stand-in (one conv with a sinusoidal time
embedding, random_or_learned_sinusoidal_cond=True, no self-conditioning);
einops.rearrange is a local stand-in for the one 'b -> b 1 1 1' pattern;
tqdm is a small stand-in writing "\\r{n}/{total}" to stdout as tqdm does;
2 channels, 4x4 images, 3-4 steps.
"""
import math
import sys
from math import sqrt

import torch
import torch.nn.functional as F
from torch import nn


class tqdm:
    def __init__(self, iterable=None, total=None, desc=""):
        self.iterable = iterable
        self.total = total if total is not None else len(iterable)
        self.desc = desc
        self.n = 0

    def __iter__(self):
        for obj in self.iterable:
            yield obj
            self.update(1)
        self.close()

    def update(self, n=1):
        self.n += n
        sys.stdout.write(f"\r{self.desc}{self.n}/{self.total}")
        sys.stdout.flush()

    def close(self):
        sys.stdout.write("\n")


def rearrange(t, pattern):
    assert pattern == 'b -> b 1 1 1'
    return t.reshape(t.shape[0], 1, 1, 1)


# helpers

def exists(val):
    return val is not None

def default(val, d):
    if exists(val):
        return val
    return d() if callable(d) else d

# tensor helpers

def log(t, eps = 1e-20):
    return torch.log(t.clamp(min = eps))

# normalization functions

def normalize_to_neg_one_to_one(img):
    return img * 2 - 1

def unnormalize_to_zero_to_one(t):
    return (t + 1) * 0.5


class Unet(nn.Module):
    """Stand-in for denoising_diffusion_pytorch.Unet(..., random_fourier_features / learned_sinusoidal_cond)."""

    def __init__(self, dim = 8, channels = 2):
        super().__init__()
        self.random_or_learned_sinusoidal_cond = True
        self.self_condition = False
        self.dim = dim
        self.time_mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, channels))
        self.conv = nn.Conv2d(channels, channels, 3, padding = 1)

    def forward(self, x, time, x_self_cond = None):
        half_dim = self.dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, device = x.device) * -emb)
        emb = time[:, None] * emb[None, :]
        emb = torch.cat((emb.sin(), emb.cos()), dim = -1)
        t = self.time_mlp(emb)
        return self.conv(x) + t[:, :, None, None]


class ElucidatedDiffusion(nn.Module):
    def __init__(
        self,
        net,
        *,
        image_size,
        channels = 3,
        num_sample_steps = 32, # number of sampling steps
        sigma_min = 0.002,     # min noise level
        sigma_max = 80,        # max noise level
        sigma_data = 0.5,      # standard deviation of data distribution
        rho = 7,               # controls the sampling schedule
        P_mean = -1.2,         # mean of log-normal distribution from which noise is drawn for training
        P_std = 1.2,           # standard deviation of log-normal distribution from which noise is drawn for training
        S_churn = 80,          # parameters for stochastic sampling - depends on dataset, Table 5 in apper
        S_tmin = 0.05,
        S_tmax = 50,
        S_noise = 1.003,
    ):
        super().__init__()
        assert net.random_or_learned_sinusoidal_cond
        self.self_condition = net.self_condition

        self.net = net

        # image dimensions

        self.channels = channels
        self.image_size = image_size

        # parameters

        self.sigma_min = sigma_min
        self.sigma_max = sigma_max
        self.sigma_data = sigma_data

        self.rho = rho

        self.P_mean = P_mean
        self.P_std = P_std

        self.num_sample_steps = num_sample_steps  # otherwise known as N in the paper

        self.S_churn = S_churn
        self.S_tmin = S_tmin
        self.S_tmax = S_tmax
        self.S_noise = S_noise

    @property
    def device(self):
        return next(self.net.parameters()).device

    # derived preconditioning params - Table 1

    def c_skip(self, sigma):
        return (self.sigma_data ** 2) / (sigma ** 2 + self.sigma_data ** 2)

    def c_out(self, sigma):
        return sigma * self.sigma_data * (self.sigma_data ** 2 + sigma ** 2) ** -0.5

    def c_in(self, sigma):
        return 1 * (sigma ** 2 + self.sigma_data ** 2) ** -0.5

    def c_noise(self, sigma):
        return log(sigma) * 0.25

    # preconditioned network output
    # equation (7) in the paper

    def preconditioned_network_forward(self, noised_images, sigma, self_cond = None, clamp = False):
        batch, device = noised_images.shape[0], noised_images.device

        if isinstance(sigma, float):
            sigma = torch.full((batch,), sigma, device = device)

        padded_sigma = rearrange(sigma, 'b -> b 1 1 1')

        net_out = self.net(
            self.c_in(padded_sigma) * noised_images,
            self.c_noise(sigma),
            self_cond
        )

        out = self.c_skip(padded_sigma) * noised_images +  self.c_out(padded_sigma) * net_out

        if clamp:
            out = out.clamp(-1., 1.)

        return out

    # sampling

    # sample schedule
    # equation (5) in the paper

    def sample_schedule(self, num_sample_steps = None):
        num_sample_steps = default(num_sample_steps, self.num_sample_steps)

        N = num_sample_steps
        inv_rho = 1 / self.rho

        steps = torch.arange(num_sample_steps, device = self.device, dtype = torch.float32)
        sigmas = (self.sigma_max ** inv_rho + steps / (N - 1) * (self.sigma_min ** inv_rho - self.sigma_max ** inv_rho)) ** self.rho

        sigmas = F.pad(sigmas, (0, 1), value = 0.) # last step is sigma value of 0.
        return sigmas

    @torch.no_grad()
    def sample_using_dpmpp(self, batch_size = 16, num_sample_steps = None):
        """
        thanks to Katherine Crowson (https://github.com/crowsonkb) for figuring it all out!
        https://arxiv.org/abs/2211.01095
        """

        device, num_sample_steps = self.device, default(num_sample_steps, self.num_sample_steps)

        sigmas = self.sample_schedule(num_sample_steps)

        shape = (batch_size, self.channels, self.image_size, self.image_size)
        images  = sigmas[0] * torch.randn(shape, device = device)

        sigma_fn = lambda t: t.neg().exp()
        t_fn = lambda sigma: sigma.log().neg()

        old_denoised = None
        for i in tqdm(range(len(sigmas) - 1)):
            denoised = self.preconditioned_network_forward(images, sigmas[i].item())
            t, t_next = t_fn(sigmas[i]), t_fn(sigmas[i + 1])
            h = t_next - t

            if not exists(old_denoised) or sigmas[i + 1] == 0:
                denoised_d = denoised
            else:
                h_last = t - t_fn(sigmas[i - 1])
                r = h_last / h
                gamma = - 1 / (2 * r)
                denoised_d = (1 - gamma) * denoised + gamma * old_denoised

            images = (sigma_fn(t_next) / sigma_fn(t)) * images - (-h).expm1() * denoised_d
            old_denoised = denoised

        images = images.clamp(-1., 1.)
        return unnormalize_to_zero_to_one(images)


def build_sampler():
    diffusion = ElucidatedDiffusion(Unet(dim = 8, channels = 2), image_size = 4, channels = 2, num_sample_steps = 4)
    diffusion.sample_using_dpmpp = torch.compile(diffusion.sample_using_dpmpp)
    return diffusion


def make():
    torch.manual_seed(0)
    diffusion = ElucidatedDiffusion(Unet(dim = 8, channels = 2), image_size = 4, channels = 2, num_sample_steps = 4)
    return diffusion.sample_using_dpmpp, [(2,), (1, 3)]
