"""diffusers AutoencoderKL: `encode` slices the batch when `self.use_slicing and x.shape[0] > 1`, skips tiling on
small inputs, builds a `DiagonalGaussianDistribution` (clamp, `if self.deterministic:`), then samples or takes
the mode (no break).

Source: huggingface/diffusers@v0.42.1:src/diffusers/models/autoencoders/autoencoder_kl.py:158-270 and
src/diffusers/models/autoencoders/vae.py:690-745
Census: penguinwu/oss-model-graph-break-corpus identify_results (2026-04-19): AutoencoderKL is full_graph in eval
and train.
Kept: `_encode`, `encode`, `decode` slicing, `forward` (sample_posterior flag), DiagonalGaussianDistribution
(__init__, sample, kl, mode).
Simplified: encoder/decoder are single convs; `randn_tensor` is torch.randn with the generator; outputs are
tuples instead of dataclasses.
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
            self.var = self.std = torch.zeros_like(
                self.mean, device=self.parameters.device, dtype=self.parameters.dtype
            )

    def sample(self, generator=None):
        # make sure sample is on the same device as the parameters and has same dtype
        sample = torch.randn(self.mean.shape, generator=generator, device=self.parameters.device,
                             dtype=self.parameters.dtype)
        x = self.mean + self.std * sample
        return x

    def kl(self, other=None):
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

    def mode(self):
        return self.mean


class AutoencoderKL(nn.Module):
    def __init__(self, use_slicing=True):
        super().__init__()
        self.encoder = nn.Conv2d(3, 4, 3, padding=1)
        self.quant_conv = nn.Conv2d(4, 4, 1)
        self.post_quant_conv = nn.Conv2d(2, 2, 1)
        self.decoder = nn.Conv2d(2, 3, 3, padding=1)
        self.use_slicing = use_slicing
        self.use_tiling = False
        self.tile_sample_min_size = 64

    def _encode(self, x):
        batch_size, num_channels, height, width = x.shape
        if self.use_tiling and (width > self.tile_sample_min_size or height > self.tile_sample_min_size):
            return self._tiled_encode(x)
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
        return (posterior,)

    def _decode(self, z):
        if self.post_quant_conv is not None:
            z = self.post_quant_conv(z)
        return self.decoder(z)

    def decode(self, z):
        if self.use_slicing and z.shape[0] > 1:
            decoded_slices = [self._decode(z_slice) for z_slice in z.split(1)]
            decoded = torch.cat(decoded_slices)
        else:
            decoded = self._decode(z)
        return decoded

    def forward(self, sample, sample_posterior=False, generator=None):
        x = sample
        posterior = self.encode(x)[0]
        if sample_posterior:
            z = posterior.sample(generator=generator)
        else:
            z = posterior.mode()
        dec = self.decode(z)
        return dec, posterior.kl()


vae = torch.compile(AutoencoderKL())


def make():
    torch.manual_seed(0)
    return AutoencoderKL(), [(torch.randn(2, 3, 4, 4),), (torch.randn(1, 3, 4, 4), True)]
