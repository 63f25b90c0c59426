"""StyleGAN2 (rosinality) regularizers: `g_path_regularize` and `d_r1_loss` take `autograd.grad(..., create_graph=True)` of the generator/discriminator outputs; `mean_path_length` arrives as a Python int first and a tensor afterwards.

Source: rosinality/stylegan2-pytorch@0832b16f19b3029c937972252633e9b717a59293:train.py:56-100
Kept: d_logistic_loss, d_r1_loss, g_nonsaturating_loss, g_path_regularize and
make_noise verbatim; the `mean_path_length = 0` start value of train().
Simplified: the StyleGAN2 generator is replaced by a tiny latent -> image map built
in make() (the regularizer is what gets compiled); 2 images of 4x4, latent 8.
"""
import math

import torch
from torch import autograd
from torch.nn import functional as F


def d_logistic_loss(real_pred, fake_pred):
    real_loss = F.softplus(-real_pred)
    fake_loss = F.softplus(fake_pred)

    return real_loss.mean() + fake_loss.mean()


def d_r1_loss(real_pred, real_img):
    grad_real, = autograd.grad(
        outputs=real_pred.sum(), inputs=real_img, create_graph=True
    )
    grad_penalty = (grad_real.view(grad_real.shape[0], -1).norm(2, dim=1) ** 2).mean()

    return grad_penalty


def g_nonsaturating_loss(fake_pred):
    loss = F.softplus(-fake_pred).mean()

    return loss


def g_path_regularize(fake_img, latents, mean_path_length, decay=0.01):
    noise = torch.randn_like(fake_img) / math.sqrt(
        fake_img.shape[2] * fake_img.shape[3]
    )
    grad, = autograd.grad(
        outputs=(fake_img * noise).sum(), inputs=latents, create_graph=True
    )
    path_lengths = torch.sqrt(grad.pow(2).sum(2).mean(1))

    path_mean = mean_path_length + decay * (
        path_lengths.detach().mean() - mean_path_length
    )

    path_penalty = (path_lengths - path_mean).pow(2).mean()

    return path_penalty, path_mean


def make_noise(batch, latent_dim, n_noise, device):
    if n_noise == 1:
        return torch.randn(batch, latent_dim, device=device)

    noises = torch.randn(n_noise, batch, latent_dim, device=device).unbind(0)

    return noises


path_regularize = torch.compile(g_path_regularize, backend="inductor")


def make():
    torch.manual_seed(0)
    # latents as the generator returns them with return_latents=True: (batch, n_latent, latent)
    latents = torch.randn(2, 3, 8, requires_grad=True)
    proj = torch.randn(8, 3 * 16)
    fake_img = torch.tanh(latents.mean(1) @ proj).view(2, 3, 4, 4)
    return g_path_regularize, [
        (fake_img, latents, 0),
        (fake_img, latents, torch.tensor(0.5)),
    ]
