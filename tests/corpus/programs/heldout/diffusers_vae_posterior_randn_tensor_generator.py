"""diffusers AutoencoderKL training step: DiagonalGaussianDistribution.sample(generator) through randn_tensor (generator device checks, list-of-generators path), decode, KL term.

Source: huggingface/diffusers@58eb52c080:src/diffusers/utils/torch_utils.py:183-234; src/diffusers/models/autoencoders/vae.py:687-741; examples/research_projects/autoencoderkl/train_autoencoderkl.py (the `posterior.sample()` / `posterior.kl().mean()` loss)
Kept: randn_tensor verbatim (isinstance(device, str), generator.device.type
checks with logger.info, list-of-generators loop with torch.cat),
DiagonalGaussianDistribution verbatim (chunk, clamp, deterministic branch,
sample, kl with and without `other`, nll with np.log, mode), and the
training-step shape: encode -> latent_dist.sample(generator) -> decode ->
mse + kl_scale * kl.mean(), backward.
Simplified: the VAE is one conv encoder producing 2*latent channels and one
conv decoder; images 1x3x8x8.
"""
import logging

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

logger = logging.getLogger(__name__)


def randn_tensor(shape, generator=None, device=None, dtype=None, layout=None):
    # device on which tensor is created defaults to device
    if isinstance(device, str):
        device = torch.device(device)
    rand_device = device
    batch_size = shape[0]

    layout = layout or torch.strided
    device = device or torch.device("cpu")

    # Neuron does not support creating random tensors directly on device; always use CPU
    if device.type == "neuron":
        rand_device = torch.device("cpu")

    if generator is not None:
        gen_device_type = generator.device.type if not isinstance(generator, list) else generator[0].device.type
        if gen_device_type != device.type and gen_device_type == "cpu":
            rand_device = "cpu"
            if device.type not in ("mps", "neuron"):
                logger.info(
                    f"The passed generator was created on 'cpu' even though a tensor on {device} was expected."
                    f" Tensors will be created on 'cpu' and then moved to {device}. Note that one can probably"
                    f" slightly speed up this function by passing a generator that was created on the {device} device."
                )
        elif gen_device_type != device.type and gen_device_type == "cuda":
            raise ValueError(f"Cannot generate a {device} tensor from a generator of type {gen_device_type}.")

    # make sure generator list of length 1 is treated like a non-list
    if isinstance(generator, list) and len(generator) == 1:
        generator = generator[0]

    if isinstance(generator, list):
        shape = (1,) + shape[1:]
        latents = [
            torch.randn(shape, generator=generator[i], device=rand_device, dtype=dtype, layout=layout)
            for i in range(batch_size)
        ]
        latents = torch.cat(latents, dim=0).to(device)
    else:
        latents = torch.randn(shape, generator=generator, device=rand_device, dtype=dtype, layout=layout).to(device)

    return latents


class DiagonalGaussianDistribution(object):
    def __init__(self, parameters: torch.Tensor, deterministic: bool = False):
        self.parameters = parameters
        self.mean, self.logvar = torch.chunk(parameters, 2, dim=1)
        self.logvar = torch.clamp(self.logvar, -30.0, 20.0)
        self.deterministic = deterministic
        self.std = torch.exp(0.5 * self.logvar)
        self.var = torch.exp(self.logvar)
        if self.deterministic:
            self.var = self.std = torch.zeros_like(
                self.mean, device=self.parameters.device, dtype=self.parameters.dtype
            )

    def sample(self, generator=None) -> torch.Tensor:
        # make sure sample is on the same device as the parameters and has same dtype
        sample = randn_tensor(
            self.mean.shape,
            generator=generator,
            device=self.parameters.device,
            dtype=self.parameters.dtype,
        )
        x = self.mean + self.std * sample
        return x

    def kl(self, other: "DiagonalGaussianDistribution" = None) -> torch.Tensor:
        if self.deterministic:
            return torch.Tensor([0.0])
        else:
            if other is None:
                return 0.5 * torch.sum(
                    torch.pow(self.mean, 2) + self.var - 1.0 - self.logvar,
                    dim=[1, 2, 3],
                )
            else:
                return 0.5 * torch.sum(
                    torch.pow(self.mean - other.mean, 2) / other.var
                    + self.var / other.var
                    - 1.0
                    - self.logvar
                    + other.logvar,
                    dim=[1, 2, 3],
                )

    def nll(self, sample: torch.Tensor, dims=[1, 2, 3]) -> torch.Tensor:
        if self.deterministic:
            return torch.Tensor([0.0])
        logtwopi = np.log(2.0 * np.pi)
        return 0.5 * torch.sum(
            logtwopi + self.logvar + torch.pow(sample - self.mean, 2) / self.var,
            dim=dims,
        )

    def mode(self) -> torch.Tensor:
        return self.mean


class AutoencoderKLOutput:
    def __init__(self, latent_dist):
        self.latent_dist = latent_dist


class TinyAutoencoderKL(nn.Module):
    def __init__(self, latent_channels=2):
        super().__init__()
        self.encoder = nn.Conv2d(3, 2 * latent_channels, 3, stride=2, padding=1)
        self.decoder = nn.ConvTranspose2d(latent_channels, 3, 4, stride=2, padding=1)

    def encode(self, x):
        h = self.encoder(x)
        posterior = DiagonalGaussianDistribution(h)
        return AutoencoderKLOutput(latent_dist=posterior)

    def decode(self, z):
        return self.decoder(z)


def train_step(vae, pixel_values, generator, kl_scale=1e-6):
    posterior = vae.encode(pixel_values).latent_dist
    z = posterior.sample(generator=generator)
    pred = vae.decode(z)
    mse_loss = F.mse_loss(pred.float(), pixel_values.float(), reduction="mean")
    kl_loss = posterior.kl().mean()
    loss = mse_loss + kl_scale * kl_loss
    loss.backward()
    return loss.detach(), kl_loss.detach(), vae.encoder.weight.grad.clone()


compiled_step = torch.compile(train_step)


def make():
    torch.manual_seed(0)
    vae = TinyAutoencoderKL()
    x = torch.randn(2, 3, 8, 8)
    gens = [torch.Generator().manual_seed(3 + i) for i in range(x.shape[0])]
    return (lambda pixel_values, generator: train_step(vae, pixel_values, generator)), [
        (x, torch.Generator().manual_seed(3)),
        (x, gens),
        (x, None),
    ]
