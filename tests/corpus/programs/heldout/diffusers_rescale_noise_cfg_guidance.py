"""diffusers classifier-free guidance step with rescale_noise_cfg: chunk of the doubled batch, std over non-batch dims (no break).

Source: huggingface/diffusers@58eb52c080:src/diffusers/pipelines/stable_diffusion/pipeline_stable_diffusion.py:69-92,1000-1030
Kept: rescale_noise_cfg verbatim (std over `list(range(1, ndim))`, the
blend by guidance_rescale) and the pipeline's denoising-loop body: cat of
latents for CFG, the unet call, `noise_pred.chunk(2)`, the guidance formula
and `if self.do_classifier_free_guidance and self.guidance_rescale > 0.0`.
Simplified: the unet is a linear layer over flattened latents; guidance 7.5.
"""
import torch
from torch import nn


def rescale_noise_cfg(noise_cfg, noise_pred_text, guidance_rescale=0.0):
    std_text = noise_pred_text.std(dim=list(range(1, noise_pred_text.ndim)), keepdim=True)
    std_cfg = noise_cfg.std(dim=list(range(1, noise_cfg.ndim)), keepdim=True)
    noise_pred_rescaled = noise_cfg * (std_text / std_cfg)
    noise_cfg = guidance_rescale * noise_pred_rescaled + (1 - guidance_rescale) * noise_cfg
    return noise_cfg


class GuidedUNet(nn.Module):
    def __init__(self, guidance_scale=7.5, guidance_rescale=0.7):
        super().__init__()
        self.unet = nn.Linear(4, 4)
        self._guidance_scale = guidance_scale
        self._guidance_rescale = guidance_rescale

    @property
    def do_classifier_free_guidance(self):
        return self._guidance_scale > 1

    @property
    def guidance_rescale(self):
        return self._guidance_rescale

    def forward(self, latents, prompt_embeds):
        latent_model_input = torch.cat([latents] * 2) if self.do_classifier_free_guidance else latents
        noise_pred = self.unet(latent_model_input) + prompt_embeds
        if self.do_classifier_free_guidance:
            noise_pred_uncond, noise_pred_text = noise_pred.chunk(2)
            noise_pred = noise_pred_uncond + self._guidance_scale * (noise_pred_text - noise_pred_uncond)
        if self.do_classifier_free_guidance and self.guidance_rescale > 0.0:
            noise_pred = rescale_noise_cfg(noise_pred, noise_pred_text, guidance_rescale=self.guidance_rescale)
        return noise_pred


pipe_unet = GuidedUNet()
pipe_unet = torch.compile(pipe_unet, mode="reduce-overhead", fullgraph=True)


def make():
    torch.manual_seed(0)
    return GuidedUNet(), [(torch.randn(1, 3, 4), torch.randn(2, 3, 4))]
