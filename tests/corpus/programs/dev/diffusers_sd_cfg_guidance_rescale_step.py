"""diffusers StableDiffusionPipeline denoising step: classifier-free guidance with rescale_noise_cfg (no break expected).

Source: huggingface/diffusers@58eb52c080:src/diffusers/pipelines/stable_diffusion/pipeline_stable_diffusion.py (do_classifier_free_guidance,
guidance_rescale properties, the loop body); src/diffusers/guiders/guider_utils.py:374-396 (rescale_noise_cfg);
src/diffusers/models/embeddings.py:27-78 (get_timestep_embedding)
Kept: the guidance properties (`_guidance_scale > 1 and time_cond_proj_dim is None`),
`torch.cat([latents] * 2) if do_classifier_free_guidance else latents`,
scale_model_input, the unet call with return_dict=False and `[0]`, chunk(2)
and the guidance formula, `if do_classifier_free_guidance and guidance_rescale > 0.0`
rescale with std over all non-batch dims, the UNet's timestep handling
(`torch.is_tensor`, 0-d -> [None], expand to batch) and get_timestep_embedding
(assert on 1-D, exponent, flip_sin_to_cos, odd-dim pad).
Simplified: the UNet is conv + time MLP + a cross-attention-free text bias;
the scheduler's scale_model_input is DDIM's identity; one step is compiled.
"""
import functools
import math
from types import SimpleNamespace

import torch
from torch import nn


def get_timestep_embedding(timesteps, embedding_dim, flip_sin_to_cos=False, downscale_freq_shift=1, scale=1,
                           max_period=10000):
    assert len(timesteps.shape) == 1, "Timesteps should be a 1d-array"

    half_dim = embedding_dim // 2
    exponent = -math.log(max_period) * torch.arange(
        start=0, end=half_dim, dtype=torch.float32, device=timesteps.device
    )
    exponent = exponent / (half_dim - downscale_freq_shift)

    emb = torch.exp(exponent)
    emb = timesteps[:, None].float() * emb[None, :]
    emb = scale * emb
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)

    if flip_sin_to_cos:
        emb = torch.cat([emb[:, half_dim:], emb[:, :half_dim]], dim=-1)

    if embedding_dim % 2 == 1:
        emb = torch.nn.functional.pad(emb, (0, 1, 0, 0))
    return emb


def rescale_noise_cfg(noise_cfg, noise_pred_text, guidance_rescale=0.0):
    std_text = noise_pred_text.std(dim=list(range(1, noise_pred_text.ndim)), keepdim=True)
    std_cfg = noise_cfg.std(dim=list(range(1, noise_cfg.ndim)), keepdim=True)
    noise_pred_rescaled = noise_cfg * (std_text / std_cfg)
    noise_cfg = guidance_rescale * noise_pred_rescaled + (1 - guidance_rescale) * noise_cfg
    return noise_cfg


class UNet2DConditionModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(in_channels=2, time_cond_proj_dim=None, flip_sin_to_cos=True, freq_shift=0)
        self.time_embedding = nn.Sequential(nn.Linear(7, 8), nn.SiLU(), nn.Linear(8, 2))
        self.text_proj = nn.Linear(6, 2)
        self.conv = nn.Conv2d(2, 2, 3, padding=1)

    def forward(self, sample, timestep, encoder_hidden_states, timestep_cond=None, cross_attention_kwargs=None,
                return_dict=True):
        timesteps = timestep
        if not torch.is_tensor(timesteps):
            is_mps = sample.device.type == "mps"
            if isinstance(timestep, float):
                dtype = torch.float32 if is_mps else torch.float64
            else:
                dtype = torch.int32 if is_mps else torch.int64
            timesteps = torch.tensor([timesteps], dtype=dtype, device=sample.device)
        elif len(timesteps.shape) == 0:
            timesteps = timesteps[None].to(sample.device)
        timesteps = timesteps.expand(sample.shape[0])

        t_emb = get_timestep_embedding(timesteps, 7, self.config.flip_sin_to_cos, self.config.freq_shift)
        t_emb = t_emb.to(dtype=sample.dtype)
        emb = self.time_embedding(t_emb)
        text = self.text_proj(encoder_hidden_states.mean(dim=1))
        out = self.conv(sample) + (emb + text)[:, :, None, None]
        if not return_dict:
            return (out,)
        return {"sample": out}


class DDIMScheduler:
    def scale_model_input(self, sample, timestep=None):
        return sample


class StableDiffusionPipeline:
    def __init__(self, unet, scheduler, guidance_scale=7.5, guidance_rescale=0.0):
        self.unet = unet
        self.scheduler = scheduler
        self._guidance_scale = guidance_scale
        self._guidance_rescale = guidance_rescale
        self._cross_attention_kwargs = None
        self._interrupt = False

    @property
    def guidance_scale(self):
        return self._guidance_scale

    @property
    def guidance_rescale(self):
        return self._guidance_rescale

    @property
    def do_classifier_free_guidance(self):
        return self._guidance_scale > 1 and self.unet.config.time_cond_proj_dim is None

    @property
    def cross_attention_kwargs(self):
        return self._cross_attention_kwargs

    def predict_noise(self, latents, t, prompt_embeds, timestep_cond=None):
        latent_model_input = torch.cat([latents] * 2) if self.do_classifier_free_guidance else latents
        latent_model_input = self.scheduler.scale_model_input(latent_model_input, t)

        noise_pred = self.unet(
            latent_model_input,
            t,
            encoder_hidden_states=prompt_embeds,
            timestep_cond=timestep_cond,
            cross_attention_kwargs=self.cross_attention_kwargs,
            return_dict=False,
        )[0]

        if self.do_classifier_free_guidance:
            noise_pred_uncond, noise_pred_text = noise_pred.chunk(2)
            noise_pred = noise_pred_uncond + self.guidance_scale * (noise_pred_text - noise_pred_uncond)

        if self.do_classifier_free_guidance and self.guidance_rescale > 0.0:
            noise_pred = rescale_noise_cfg(noise_pred, noise_pred_text, guidance_rescale=self.guidance_rescale)
        return noise_pred


compile_step = functools.partial(torch.compile, mode="max-autotune-no-cudagraphs", fullgraph=True)


def main():
    torch.manual_seed(0)
    pipe = StableDiffusionPipeline(UNet2DConditionModel(), DDIMScheduler(), guidance_rescale=0.7)
    step = compile_step(pipe.predict_noise)
    return step(torch.randn(1, 2, 4, 4), torch.tensor(981), torch.randn(2, 3, 6))


def make():
    torch.manual_seed(0)
    pipe = StableDiffusionPipeline(UNet2DConditionModel(), DDIMScheduler(), guidance_rescale=0.7)
    latents = torch.randn(1, 2, 4, 4)
    prompt_embeds = torch.randn(2, 3, 6)
    return pipe.predict_noise, [(latents, torch.tensor(981), prompt_embeds), (latents, torch.tensor([21]), prompt_embeds)]
