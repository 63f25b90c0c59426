"""diffusers AutoencoderTiny forward: latents scaled to [0, 1], quantized in place with
`.mul_(255).round_().byte()`, then unscaled (no break).

Source: huggingface/diffusers@v0.42.1:src/diffusers/models/autoencoders/autoencoder_tiny.py:156-162, 290-320
Census: penguinwu/oss-model-graph-break-corpus identify_results (2026-04-19): AutoencoderTiny is full_graph in eval
and train.
Kept: scale_latents/unscale_latents and forward's quantize round trip, return_dict tuple branch.
Simplified: the TAESD encoder/decoder are single convs; outputs are tuples.
"""
import torch
from torch import nn


class AutoencoderTiny(nn.Module):
    def __init__(self, latent_magnitude=3, latent_shift=0.5):
        super().__init__()
        self.latent_magnitude = latent_magnitude
        self.latent_shift = latent_shift
        self.encoder = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.decoder = nn.ConvTranspose2d(4, 3, 4, stride=2, padding=1)

    def scale_latents(self, x):
        """raw latents -> [0, 1]"""
        return x.div(2 * self.latent_magnitude).add(self.latent_shift).clamp(0, 1)

    def unscale_latents(self, x):
        """[0, 1] -> raw latents"""
        return x.sub(self.latent_shift).mul(2 * self.latent_magnitude)

    def encode(self, x):
        return self.encoder(x)

    def decode(self, x):
        return self.decoder(x)

    def forward(self, sample, return_dict=True):
        enc = self.encode(sample)

        # scale latents to be in [0, 1], then quantize latents to a byte tensor,
        # as if we were storing the latents in an RGBA uint8 image.
        scaled_enc = self.scale_latents(enc).mul_(255).round_().byte()

        # unquantize latents back into [0, 1], then unscale latents back to their original range,
        # as if we were loading the latents from an RGBA uint8 image.
        unscaled_enc = self.unscale_latents(scaled_enc / 255.0)

        dec = self.decode(unscaled_enc)

        if not return_dict:
            return (dec,)
        return {"sample": dec}


taesd = torch.compile(AutoencoderTiny().eval())


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 3, 8, 8)
    return AutoencoderTiny().eval(), [(x,), (x, False)]
