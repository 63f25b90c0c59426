"""Stable Diffusion training forward: VAE `encode(...).latent_dist.sample()` through diffusers' `randn_tensor`.

Source: pytorch/pytorch#111385 (https://github.com/pytorch/pytorch/issues/111385)
Kept: the reported call chain under a dynamic-shape compile: the training
model's forward encodes images with `self.vae.encode(inputs.half()).latent_dist.sample()`
and scales by the latent scale; AutoencoderKL.encode (slicing flag, encoder,
`quant_conv`, `DiagonalGaussianDistribution(moments)`, output object with
`latent_dist`); DiagonalGaussianDistribution (chunk into mean/logvar, clamp,
std/var, deterministic branch, `sample()` calling `randn_tensor(self.mean.shape,
generator=..., device=self.parameters.device, dtype=self.parameters.dtype)`);
and diffusers' `randn_tensor` helper (generator device checks with
`logger.info`, list-of-generators path, `torch.randn(...).to(device)`).
Translated from huggingface/diffusers (src/diffusers/models/vae.py,
autoencoder_kl.py, utils/torch_utils.py). Simplified: the encoder is one
conv + SiLU + conv (4 latent channels, 8x8 images), the output class is a
plain dataclass instead of diffusers' BaseOutput, tiling and the text encoder
are dropped; `torch.compile(model, dynamic=True)` as reported.
"""
import logging
from dataclasses import dataclass
from typing import List, Optional, Tuple, Union

import torch
from torch import nn

logger = logging.getLogger(__name__)


def randn_tensor(
    shape: Union[Tuple, List],
    generator: Optional[Union[List["torch.Generator"], "torch.Generator"]] = None,
    device: Optional["torch.device"] = None,
    dtype: Optional["torch.dtype"] = None,
    layout: Optional["torch.layout"] = None,
):
    # device on which tensor is created defaults to device
    rand_device = device
    batch_size = shape[0]

    layout = layout or torch.strided
    device = device or torch.device("cpu")

    if generator is not None:
        gen_device_type = generator.device.type if not isinstance(generator, list) else generator[0].device.type
        if gen_device_type != device.type and gen_device_type == "cpu":
            rand_device = "cpu"
            if device != "mps":
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
    def __init__(self, parameters, deterministic=False):
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

    def sample(self, generator: Optional[torch.Generator] = None) -> torch.FloatTensor:
        # make sure sample is on the same device as the parameters and has same dtype
        sample = randn_tensor(
            self.mean.shape, generator=generator, device=self.parameters.device, dtype=self.parameters.dtype
        )
        x = self.mean + self.std * sample
        return x


@dataclass
class AutoencoderKLOutput:
    latent_dist: DiagonalGaussianDistribution


class Encoder(nn.Module):
    def __init__(self, in_channels=3, latent_channels=4, block_out_channels=8):
        super().__init__()
        self.conv_in = nn.Conv2d(in_channels, block_out_channels, kernel_size=3, padding=1)
        self.conv_act = nn.SiLU()
        self.conv_out = nn.Conv2d(block_out_channels, 2 * latent_channels, kernel_size=3, padding=1)

    def forward(self, x):
        return self.conv_out(self.conv_act(self.conv_in(x)))


class AutoencoderKL(nn.Module):
    def __init__(self, latent_channels=4):
        super().__init__()
        self.encoder = Encoder(latent_channels=latent_channels)
        self.quant_conv = nn.Conv2d(2 * latent_channels, 2 * latent_channels, 1)
        self.use_slicing = False

    def encode(self, x: torch.FloatTensor, return_dict: bool = True):
        if self.use_slicing and x.shape[0] > 1:
            encoded_slices = [self.encoder(x_slice) for x_slice in x.split(1)]
            h = torch.cat(encoded_slices)
        else:
            h = self.encoder(x)

        moments = self.quant_conv(h)
        posterior = DiagonalGaussianDistribution(moments)

        if not return_dict:
            return (posterior,)

        return AutoencoderKLOutput(latent_dist=posterior)


class StableDiffusion(nn.Module):
    def __init__(self, latent_scale=0.18215):
        super().__init__()
        self.vae = AutoencoderKL().half()
        self.latent_scale = latent_scale

    def forward(self, inputs):
        latents = self.vae.encode(inputs.half()).latent_dist.sample()
        latents = latents * self.latent_scale
        return latents


def build():
    return torch.compile(StableDiffusion(), dynamic=True)


def make():
    torch.manual_seed(0)
    return StableDiffusion(), [(torch.randn(2, 3, 8, 8),), (torch.randn(1, 3, 16, 8),)]
