"""diffusers VAE decode + VaeImageProcessor.postprocess compiled together: per-image conditional denormalize in a list comprehension, `.cpu().permute(...).float().numpy()` for output_type="np", and a deprecation warning for unknown output types.

Source: huggingface/diffusers@v0.42.1:src/diffusers/image_processor.py:83-128,191-237,541-559,739-787; src/diffusers/pipelines/stable_diffusion/pipeline_stable_diffusion.py (the `vae.decode(latents / scaling_factor)` then `image_processor.postprocess(image, output_type=..., do_denormalize=...)` step)
Kept: VaeImageProcessor's config (do_normalize, vae_scale_factor),
pt_to_numpy, denormalize, _denormalize_conditionally (None -> config switch,
else `torch.stack([... if do_denormalize[i] else images[i] for i in range(...)])`)
and postprocess (the isinstance ValueError, the unknown output_type message
falling back to "np", the latent/pt/np returns); the pipeline's decode step.
Simplified: deprecate(..., standard_warn=False) is its warnings.warn; the "pil"
output (PIL) is left out; the VAE decoder is one conv on 4x4 latents returning
a DecoderOutput dataclass; the step runs under torch.no_grad() as the
pipeline's __call__ does.
"""
import warnings
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import torch
from torch import nn


class VaeImageProcessor:
    def __init__(self, do_resize: bool = True, vae_scale_factor: int = 8, do_normalize: bool = True):
        self.config = SimpleNamespace(do_resize=do_resize, vae_scale_factor=vae_scale_factor, do_normalize=do_normalize)

    @staticmethod
    def pt_to_numpy(images: torch.Tensor) -> np.ndarray:
        images = images.cpu().permute(0, 2, 3, 1).float().numpy()
        return images

    @staticmethod
    def denormalize(images):
        return (images * 0.5 + 0.5).clamp(0, 1)

    def _denormalize_conditionally(self, images: torch.Tensor, do_denormalize=None) -> torch.Tensor:
        if do_denormalize is None:
            return self.denormalize(images) if self.config.do_normalize else images

        return torch.stack(
            [self.denormalize(images[i]) if do_denormalize[i] else images[i] for i in range(images.shape[0])]
        )

    def postprocess(self, image: torch.Tensor, output_type: str = "pil", do_denormalize=None):
        if not isinstance(image, torch.Tensor):
            raise ValueError(
                f"Input for postprocessing is in incorrect format: {type(image)}. We only support pytorch tensor"
            )
        if output_type not in ["latent", "pt", "np", "pil"]:
            deprecation_message = (
                f"the output_type {output_type} is outdated and has been set to `np`. Please make sure to set it to one of these instead: "
                "`pil`, `np`, `pt`, `latent`"
            )
            warnings.warn(deprecation_message, FutureWarning, stacklevel=2)
            output_type = "np"

        if output_type == "latent":
            return image

        image = self._denormalize_conditionally(image, do_denormalize)

        if output_type == "pt":
            return image

        image = self.pt_to_numpy(image)

        if output_type == "np":
            return image


@dataclass
class DecoderOutput:
    sample: torch.Tensor


class TinyDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(scaling_factor=0.18215)
        self.conv = nn.Conv2d(4, 3, 3, padding=1)

    def decode(self, z):
        return DecoderOutput(sample=torch.tanh(self.conv(nn.functional.interpolate(z, scale_factor=2.0))))


vae = TinyDecoder().eval()
image_processor = VaeImageProcessor(vae_scale_factor=2)


@torch.compile
@torch.no_grad()
def decode_latents(latents, output_type="np", do_denormalize=None):
    image = vae.decode(latents / vae.config.scaling_factor).sample
    return image_processor.postprocess(image, output_type=output_type, do_denormalize=do_denormalize)


def make():
    torch.manual_seed(0)
    latents = torch.randn(2, 4, 4, 4)
    return decode_latents._torchdynamo_orig_callable, [
        (latents, "np"),
        (latents, "pt", [True, False]),
        (latents, "latent"),
        (latents, "numpy"),
    ]
