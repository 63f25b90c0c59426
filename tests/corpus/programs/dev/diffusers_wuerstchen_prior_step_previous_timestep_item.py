"""Wuerstchen prior denoising step: classifier-free guidance via torch.lerp, then DDPMWuerstchenScheduler.step, whose previous_timestep looks the ratio up with `(self.timesteps - timestep[0]).abs().argmin().item()` and masks the noise with `(prev_t != 0).float()`.

Source: huggingface/diffusers@58eb52c0803ea9af3abec60841c2a093bdf1f951:src/diffusers/schedulers/scheduling_ddpm_wuerstchen.py:30-270
Also: src/diffusers/pipelines/deprecated/wuerstchen/pipeline_wuerstchen_prior.py:472-495 (loop body),
src/diffusers/pipelines/deprecated/wuerstchen/modeling_wuerstchen_prior.py:79-125 (gen_r_embedding, forward),
modeling_wuerstchen_common.py:17-25 (TimestepBlock).
Kept: the scheduler's __init__/_alpha_cumprod (scaler branches)/set_timesteps/
step/previous_timestep/add_noise, the output dataclass and `return_dict`
plumbing, randn_tensor, the pipeline's loop body (ratio expand, CFG cat/chunk/
lerp, scheduler.step(...).prev_sample) as a function compiled with
`torch.compile(prior_denoise_step)`.
Simplified: ConfigMixin/register_to_config dropped; the prior keeps
projection, cond_mapper, gen_r_embedding and TimestepBlocks but drops
ResBlock/AttnBlock (the cross-attention on c_embed is stood in for by adding
its mean); WuerstchenLayerNorm -> GroupNorm(1); c=8, c_r=6, 4x4 latents.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn


@dataclass
class DDPMWuerstchenSchedulerOutput:
    prev_sample: torch.Tensor


def randn_tensor(shape, generator=None, device=None, dtype=None, layout=None):
    layout = layout or torch.strided
    device = device or torch.device("cpu")
    return torch.randn(shape, generator=generator, device=device, dtype=dtype, layout=layout)


class DDPMWuerstchenScheduler:
    def __init__(
        self,
        scaler: float = 1.0,
        s: float = 0.008,
    ) -> None:
        self.scaler = scaler
        self.s = torch.tensor([s])
        self._init_alpha_cumprod = torch.cos(self.s / (1 + self.s) * torch.pi * 0.5) ** 2

        # standard deviation of the initial noise distribution
        self.init_noise_sigma = 1.0

    def _alpha_cumprod(self, t: torch.Tensor, device: torch.device) -> torch.Tensor:
        if self.scaler > 1:
            t = 1 - (1 - t) ** self.scaler
        elif self.scaler < 1:
            t = t**self.scaler
        alpha_cumprod = torch.cos(
            (t + self.s.to(device)) / (1 + self.s.to(device)) * torch.pi * 0.5
        ) ** 2 / self._init_alpha_cumprod.to(device)
        return alpha_cumprod.clamp(0.0001, 0.9999)

    def scale_model_input(self, sample: torch.Tensor, timestep: torch.Tensor | None = None) -> torch.Tensor:
        return sample

    def set_timesteps(
        self,
        num_inference_steps: int | None = None,
        timesteps: list[float] | torch.Tensor | None = None,
        device: str | torch.device | None = None,
    ) -> None:
        if timesteps is None:
            timesteps = torch.linspace(1.0, 0.0, num_inference_steps + 1, device=device)
        if not isinstance(timesteps, torch.Tensor):
            timesteps = torch.Tensor(timesteps).to(device)
        self.timesteps = timesteps

    def step(
        self,
        model_output: torch.Tensor,
        timestep: torch.Tensor,
        sample: torch.Tensor,
        generator: torch.Generator | list[torch.Generator] | None = None,
        return_dict: bool = True,
    ) -> DDPMWuerstchenSchedulerOutput | tuple[torch.Tensor]:
        dtype = model_output.dtype
        device = model_output.device
        t = timestep

        prev_t = self.previous_timestep(t)

        alpha_cumprod = self._alpha_cumprod(t, device).view(t.size(0), *[1 for _ in sample.shape[1:]])
        alpha_cumprod_prev = self._alpha_cumprod(prev_t, device).view(prev_t.size(0), *[1 for _ in sample.shape[1:]])
        alpha = alpha_cumprod / alpha_cumprod_prev

        mu = (1.0 / alpha).sqrt() * (sample - (1 - alpha) * model_output / (1 - alpha_cumprod).sqrt())

        std_noise = randn_tensor(mu.shape, generator=generator, device=model_output.device, dtype=model_output.dtype)
        std = ((1 - alpha) * (1.0 - alpha_cumprod_prev) / (1.0 - alpha_cumprod)).sqrt() * std_noise
        pred = mu + std * (prev_t != 0).float().view(prev_t.size(0), *[1 for _ in sample.shape[1:]])

        if not return_dict:
            return (pred.to(dtype),)

        return DDPMWuerstchenSchedulerOutput(prev_sample=pred.to(dtype))

    def add_noise(
        self,
        original_samples: torch.Tensor,
        noise: torch.Tensor,
        timesteps: torch.Tensor,
    ) -> torch.Tensor:
        device = original_samples.device
        dtype = original_samples.dtype
        alpha_cumprod = self._alpha_cumprod(timesteps, device=device).view(
            timesteps.size(0), *[1 for _ in original_samples.shape[1:]]
        )
        noisy_samples = alpha_cumprod.sqrt() * original_samples + (1 - alpha_cumprod).sqrt() * noise
        return noisy_samples.to(dtype=dtype)

    def previous_timestep(self, timestep: torch.Tensor) -> torch.Tensor:
        index = (self.timesteps - timestep[0]).abs().argmin().item()
        prev_t = self.timesteps[index + 1][None].expand(timestep.shape[0])
        return prev_t


class TimestepBlock(nn.Module):
    def __init__(self, c, c_timestep):
        super().__init__()
        self.mapper = nn.Linear(c_timestep, c * 2)

    def forward(self, x, t):
        a, b = self.mapper(t)[:, :, None, None].chunk(2, dim=1)
        return x * (1 + a) + b


class WuerstchenPrior(nn.Module):
    def __init__(self, c_in=4, c=8, c_cond=6, c_r=6, depth=2):
        super().__init__()
        self.c_r = c_r
        self.projection = nn.Conv2d(c_in, c, kernel_size=1)
        self.cond_mapper = nn.Sequential(
            nn.Linear(c_cond, c),
            nn.LeakyReLU(0.2),
            nn.Linear(c, c),
        )
        self.blocks = nn.ModuleList()
        for _ in range(depth):
            self.blocks.append(TimestepBlock(c, c_r))
        self.out = nn.Sequential(
            nn.GroupNorm(1, c, affine=False, eps=1e-6),
            nn.Conv2d(c, c_in * 2, kernel_size=1),
        )

    def gen_r_embedding(self, r, max_positions=10000):
        r = r * max_positions
        half_dim = self.c_r // 2
        emb = math.log(max_positions) / (half_dim - 1)
        emb = torch.arange(half_dim, device=r.device).float().mul(-emb).exp()
        emb = r[:, None] * emb[None, :]
        emb = torch.cat([emb.sin(), emb.cos()], dim=1)
        if self.c_r % 2 == 1:  # zero pad
            emb = nn.functional.pad(emb, (0, 1), mode="constant")
        return emb.to(dtype=r.dtype)

    def forward(self, x, r, c):
        x_in = x
        x = self.projection(x)
        c_embed = self.cond_mapper(c)
        r_embed = self.gen_r_embedding(r)
        for block in self.blocks:
            if isinstance(block, TimestepBlock):
                x = block(x, r_embed)
            else:
                x = block(x)
        x = x + c_embed.mean(1)[:, :, None, None]
        a, b = self.out(x).chunk(2, dim=1)
        return (x_in - a) / ((1 - b).abs() + 1e-5)


def prior_denoise_step(prior, scheduler, latents, t, text_encoder_hidden_states, guidance_scale, generator=None):
    do_classifier_free_guidance = guidance_scale > 1
    dtype = latents.dtype
    ratio = t.expand(latents.size(0)).to(dtype)

    # 7. Denoise image embeddings
    predicted_image_embedding = prior(
        torch.cat([latents] * 2) if do_classifier_free_guidance else latents,
        r=torch.cat([ratio] * 2) if do_classifier_free_guidance else ratio,
        c=text_encoder_hidden_states,
    )

    # 8. Check for classifier free guidance and apply it
    if do_classifier_free_guidance:
        predicted_image_embedding_text, predicted_image_embedding_uncond = predicted_image_embedding.chunk(2)
        predicted_image_embedding = torch.lerp(
            predicted_image_embedding_uncond, predicted_image_embedding_text, guidance_scale
        )

    # 9. Renoise latents to next timestep
    latents = scheduler.step(
        model_output=predicted_image_embedding,
        timestep=ratio,
        sample=latents,
        generator=generator,
    ).prev_sample
    return latents


compiled_step = torch.compile(prior_denoise_step)


def make():
    torch.manual_seed(0)
    prior = WuerstchenPrior().eval()
    scheduler = DDPMWuerstchenScheduler()
    scheduler.set_timesteps(3)
    timesteps = scheduler.timesteps
    latents = torch.randn(1, 4, 4, 4)
    c = torch.randn(1, 3, 6)
    c2 = torch.cat([c, torch.zeros_like(c)])
    return prior_denoise_step, [
        (prior, scheduler, latents, timesteps[0], c2, 4.0),
        (prior, scheduler, latents, timesteps[2], c, 1.0),
    ]
