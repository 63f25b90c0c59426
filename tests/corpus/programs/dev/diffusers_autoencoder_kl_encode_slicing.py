"""diffusers AutoencoderKL.encode: tiling/slicing switches on shapes, DiagonalGaussianDistribution with its deterministic flag (no break).

Source: huggingface/diffusers@58eb52c080:src/diffusers/models/autoencoders/autoencoder_kl.py:158-197; src/diffusers/models/autoencoders/vae.py:688-728
Kept: _encode (the use_tiling size check, encoder, optional quant_conv),
encode (use_slicing with `x.shape[0] > 1` and a list comprehension over
x.split(1), the posterior, the return_dict tuple), DiagonalGaussianDistribution
(chunk, clamp, deterministic zeros, sample, kl with the other=None branch).
Simplified: encoder is one conv; tiling code path not exercised; 4 latent channels.
"""
import torch
from torch import nn


class DiagonalGaussianDistribution(object):
    def __init__(self, parameters, deterministic=False):
        self.parameters = parameters
        self.mean, self.logvar = torch.chunk(parameters, 2, dim=1)
        self.logvar = torch.clamp(self.logvar, -30.0, 20.0)
        self.deterministic = deterministic
        self.std = torch.exp(0.5 * self.logvar)
        self.var = torch.exp(self.logvar)
        if self.deterministic:
            self.var = self.std = torch.zeros_like(self.mean, device=self.parameters.device, dtype=self.parameters.dtype)

    def sample(self, generator=None):
        sample = torch.randn(self.mean.shape, generator=generator, device=self.parameters.device, dtype=self.parameters.dtype)
        return self.mean + self.std * sample

    def kl(self, other=None):
        if self.deterministic:
            return torch.Tensor([0.0])
        else:
            if other is None:
                return 0.5 * torch.sum(torch.pow(self.mean, 2) + self.var - 1.0 - self.logvar, dim=[1, 2, 3])
            return 0.5 * torch.sum(torch.pow(self.mean - other.mean, 2) / other.var + self.var / other.var - 1.0 - self.logvar + other.logvar, dim=[1, 2, 3])


class AutoencoderKL(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.quant_conv = nn.Conv2d(8, 8, 1)
        self.use_tiling = False
        self.use_slicing = True
        self.tile_sample_min_size = 64

    def _encode(self, x):
        batch_size, num_channels, height, width = x.shape
        if self.use_tiling and (width > self.tile_sample_min_size or height > self.tile_sample_min_size):
            raise NotImplementedError
        enc = self.encoder(x)
        if self.quant_conv is not None:
            enc = self.quant_conv(enc)
        return enc

    def encode(self, x, return_dict=True):
        if self.use_slicing and x.shape[0] > 1:
            encoded_slices = [self._encode(x_slice) for x_slice in x.split(1)]
            h = torch.cat(encoded_slices)
        else:
            h = self._encode(x)
        posterior = DiagonalGaussianDistribution(h)
        if not return_dict:
            return (posterior,)
        return {"latent_dist": posterior}

    def forward(self, x, sample_posterior=True):
        posterior = self.encode(x).get("latent_dist")
        z = posterior.sample() if sample_posterior else posterior.mean
        return z, posterior.kl()


vae = AutoencoderKL().eval()
vae = torch.compile(vae)


def make():
    torch.manual_seed(0)
    return AutoencoderKL(), [(torch.randn(2, 3, 8, 8),), (torch.randn(1, 3, 8, 8), False)]
