"""v-diffusion CLIP-guided sampling: `steps = steps[steps < starting_timestep]` (boolean-mask read) trims the spliced DDPM/cosine schedule, then sampling.sample runs a DDIM loop under `torch.cuda.amp.autocast()` through make_cond_model_fn, whose cond_fn takes `torch.autograd.grad` inside `torch.enable_grad()`.

Source: crowsonkb/v-diffusion-pytorch@439ed4caf765ec6f8fccb52213a859cac9e76d3b:clip_sample.py:45-48,67-77,179-232
Also: diffusion/sampling.py:9-50 (sample), diffusion/utils.py:47-84
(log_snr_to_alpha_sigma, t_to_alpha_sigma, alpha_sigma_to_t, get_ddpm_schedule,
get_spliced_ddpm_cosine_schedule).
Kept: those functions verbatim; run/run_all's schedule choice on
`model.min_t`, the init trim and the model_fn choice on the guidance scale.
Simplified: tqdm's trange is `range`; CLIP's image encoder and the cutouts
are one Linear on the flattened prediction; run_all returns the batch
instead of saving PNGs; 1 image of 2x4x4, 4 steps.
"""
import math
from functools import partial

import torch
from torch import nn
from torch.nn import functional as F


def log_snr_to_alpha_sigma(log_snr):
    """Returns the scaling factors for the clean image and for the noise, given
    the log SNR for a timestep."""
    return log_snr.sigmoid().sqrt(), log_snr.neg().sigmoid().sqrt()


def alpha_sigma_to_log_snr(alpha, sigma):
    """Returns a log snr, given the scaling factors for the clean image and for
    the noise."""
    return torch.log(alpha**2 / sigma**2)


def t_to_alpha_sigma(t):
    """Returns the scaling factors for the clean image and for the noise, given
    a timestep."""
    return torch.cos(t * math.pi / 2), torch.sin(t * math.pi / 2)


def alpha_sigma_to_t(alpha, sigma):
    """Returns a timestep, given the scaling factors for the clean image and for
    the noise."""
    return torch.atan2(sigma, alpha) / math.pi * 2


def get_ddpm_schedule(ddpm_t):
    """Returns timesteps for the noise schedule from the DDPM paper."""
    log_snr = -torch.special.expm1(1e-4 + 10 * ddpm_t**2).log()
    alpha, sigma = log_snr_to_alpha_sigma(log_snr)
    return alpha_sigma_to_t(alpha, sigma)


def get_spliced_ddpm_cosine_schedule(t):
    """Returns timesteps for a spliced DDPM/cosine noise schedule."""
    ddpm_crossover = 0.48536712
    cosine_crossover = 0.80074257
    big_t = t * (1 + cosine_crossover - ddpm_crossover)
    ddpm_part = get_ddpm_schedule(big_t + ddpm_crossover - cosine_crossover)
    return torch.where(big_t < cosine_crossover, big_t, ddpm_part)


@torch.no_grad()
def sample(model, x, steps, eta, extra_args, callback=None):
    """Draws samples from a model given starting noise."""
    ts = x.new_ones([x.shape[0]])

    # Create the noise schedule
    alphas, sigmas = t_to_alpha_sigma(steps)

    # The sampling loop
    for i in range(len(steps)):

        # Get the model output (v, the predicted velocity)
        with torch.cuda.amp.autocast():
            v = model(x, ts * steps[i], **extra_args).float()

        # Predict the noise and the denoised image
        pred = x * alphas[i] - v * sigmas[i]
        eps = x * sigmas[i] + v * alphas[i]

        # Call the callback
        if callback is not None:
            callback({'x': x, 'i': i, 't': steps[i], 'v': v, 'pred': pred})

        # If we are not on the last timestep, compute the noisy image for the
        # next timestep.
        if i < len(steps) - 1:
            # If eta > 0, adjust the scaling factor for the predicted noise
            # downward according to the amount of additional noise to add
            ddim_sigma = eta * (sigmas[i + 1]**2 / sigmas[i]**2).sqrt() * \
                (1 - alphas[i]**2 / alphas[i + 1]**2).sqrt()
            adjusted_sigma = (sigmas[i + 1]**2 - ddim_sigma**2).sqrt()

            # Recombine the predicted noise and predicted denoised image in the
            # correct proportions for the next step
            x = pred * alphas[i + 1] + eps * adjusted_sigma

            # Add the correct amount of fresh noise
            if eta:
                x += torch.randn_like(x) * ddim_sigma

    # If we are on the last timestep, output the denoised image
    return pred


def spherical_dist_loss(x, y):
    x = F.normalize(x, dim=-1)
    y = F.normalize(y, dim=-1)
    return (x - y).norm(dim=-1).div(2).arcsin().pow(2).mul(2)


def make_cond_model_fn(model, cond_fn):
    def cond_model_fn(x, t, **extra_args):
        with torch.enable_grad():
            x = x.detach().requires_grad_()
            v = model(x, t, **extra_args)
            alphas, sigmas = t_to_alpha_sigma(t)
            pred = x * alphas[:, None, None, None] - v * sigmas[:, None, None, None]
            cond_grad = cond_fn(x, t, pred, **extra_args).detach()
            v = v.detach() - cond_grad * (sigmas[:, None, None, None] / alphas[:, None, None, None])
        return v
    return cond_model_fn


class Args:
    init = True
    starting_timestep = 0.9
    steps = 4
    eta = 0.5
    clip_guidance_scale = 100.0
    cutn = 1
    method = 'ddim'


class TinyVModel(nn.Module):
    min_t = 0

    def __init__(self):
        super().__init__()
        self.net = nn.Conv2d(2, 2, 3, padding=1)

    def forward(self, x, t):
        return self.net(x) * t[:, None, None, None]


class TinyImageEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(32, 6)

    def encode_image(self, x):
        return self.proj(x.flatten(1))


class ClipSampler(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.model = TinyVModel()
        self.clip_model = TinyImageEncoder()

    def forward(self, x, init, clip_embed):
        args, model, clip_model = self.args, self.model, self.clip_model

        def cond_fn(x, t, pred, clip_embed):
            image_embeds = clip_model.encode_image((pred + 1) / 2).view([args.cutn, x.shape[0], -1])
            losses = spherical_dist_loss(image_embeds, clip_embed[None])
            loss = losses.mean(0).sum() * args.clip_guidance_scale
            grad = -torch.autograd.grad(loss, x)[0]
            return grad

        def run(x, steps, clip_embed):
            extra_args = {}
            cond_fn_ = partial(cond_fn, clip_embed=clip_embed)
            if args.clip_guidance_scale:
                model_fn = make_cond_model_fn(model, cond_fn_)
            else:
                model_fn = model
            if args.method == 'ddpm':
                return sample(model_fn, x, steps, 1., extra_args)
            if args.method == 'ddim':
                return sample(model_fn, x, steps, args.eta, extra_args)
            assert False

        t = torch.linspace(1, 0, args.steps + 1, device=x.device)[:-1]
        if model.min_t == 0:
            steps = get_spliced_ddpm_cosine_schedule(t)
        else:
            steps = get_ddpm_schedule(t)
        if args.init:
            steps = steps[steps < args.starting_timestep]
            alpha, sigma = t_to_alpha_sigma(steps[0])
            x = init * alpha + x * sigma
        return run(x, steps, clip_embed)


def build(**overrides):
    args = Args()
    for k, v in overrides.items():
        setattr(args, k, v)
    return ClipSampler(args)


def main():
    sampler = torch.compile(build())
    return sampler


def make():
    torch.manual_seed(0)
    s = build()
    x = torch.randn(1, 2, 4, 4)
    init = torch.randn(1, 2, 4, 4).clamp(-1, 1)
    embed = torch.randn(1, 6)
    return s, [(x, init, embed)]
