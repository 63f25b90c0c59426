"""diffusers RePaintScheduler: one RePaint loop iteration (`t < t_last` -> step, else undo_step) with tensor timesteps.

Source: huggingface/diffusers@002c07d647:src/diffusers/schedulers/scheduling_repaint.py:150-330
Kept: __init__'s linear beta schedule and final_alpha_cumprod, set_timesteps
with the jump table (numpy), _get_variance, step() verbatim (the
`prev_timestep >= 0` lookup, clip_sample, `t > 0 and self.eta > 0` variance,
known/unknown mix by mask), undo_step's loop over betas; the loop body of
RePaintPipeline.__call__ (`if t < t_last: unet + step else undo_step`).
Simplified: ConfigMixin becomes a plain config; the UNet is a 1x1 conv;
20 train steps, 5 inference steps with jump_length 2; return_dict tuples.
"""
from typing import Optional, Tuple, Union

import numpy as np
import torch
from torch import nn


class Config:
    num_train_timesteps = 20
    beta_start = 0.0001
    beta_end = 0.02
    clip_sample = True


class RePaintScheduler:
    order = 1

    def __init__(self, eta: float = 0.0):
        self.config = Config()
        self.betas = torch.linspace(self.config.beta_start, self.config.beta_end, self.config.num_train_timesteps, dtype=torch.float32)
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)
        self.one = torch.tensor(1.0)

        self.final_alpha_cumprod = torch.tensor(1.0)

        self.init_noise_sigma = 1.0

        self.num_inference_steps = None
        self.timesteps = torch.from_numpy(np.arange(0, self.config.num_train_timesteps)[::-1].copy())

        self.eta = eta

    def set_timesteps(
        self,
        num_inference_steps: int,
        jump_length: int = 10,
        jump_n_sample: int = 10,
        device: Union[str, torch.device] = None,
    ):
        num_inference_steps = min(self.config.num_train_timesteps, num_inference_steps)
        self.num_inference_steps = num_inference_steps

        timesteps = []

        jumps = {}
        for j in range(0, num_inference_steps - jump_length, jump_length):
            jumps[j] = jump_n_sample - 1

        t = num_inference_steps
        while t >= 1:
            t = t - 1
            timesteps.append(t)

            if jumps.get(t, 0) > 0:
                jumps[t] = jumps[t] - 1
                for _ in range(jump_length):
                    t = t + 1
                    timesteps.append(t)

        timesteps = np.array(timesteps) * (self.config.num_train_timesteps // self.num_inference_steps)
        self.timesteps = torch.from_numpy(timesteps).to(device)

    def _get_variance(self, t):
        prev_timestep = t - self.config.num_train_timesteps // self.num_inference_steps

        alpha_prod_t = self.alphas_cumprod[t]
        alpha_prod_t_prev = self.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else self.final_alpha_cumprod
        beta_prod_t = 1 - alpha_prod_t
        beta_prod_t_prev = 1 - alpha_prod_t_prev

        variance = (beta_prod_t_prev / beta_prod_t) * (1 - alpha_prod_t / alpha_prod_t_prev)

        return variance

    def step(
        self,
        model_output: torch.FloatTensor,
        timestep: int,
        sample: torch.FloatTensor,
        original_image: torch.FloatTensor,
        mask: torch.FloatTensor,
        generator: Optional[torch.Generator] = None,
        return_dict: bool = True,
    ):
        t = timestep
        prev_timestep = timestep - self.config.num_train_timesteps // self.num_inference_steps

        alpha_prod_t = self.alphas_cumprod[t]
        alpha_prod_t_prev = self.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else self.final_alpha_cumprod
        beta_prod_t = 1 - alpha_prod_t

        pred_original_sample = (sample - beta_prod_t**0.5 * model_output) / alpha_prod_t**0.5

        if self.config.clip_sample:
            pred_original_sample = torch.clamp(pred_original_sample, -1, 1)

        noise = torch.randn(
            model_output.shape, dtype=model_output.dtype, generator=generator, device=model_output.device
        )
        std_dev_t = self.eta * self._get_variance(timestep) ** 0.5

        variance = 0
        if t > 0 and self.eta > 0:
            variance = std_dev_t * noise

        pred_sample_direction = (1 - alpha_prod_t_prev - std_dev_t**2) ** 0.5 * model_output

        prev_unknown_part = alpha_prod_t_prev**0.5 * pred_original_sample + pred_sample_direction + variance

        prev_known_part = (alpha_prod_t**0.5) * original_image + ((1 - alpha_prod_t) ** 0.5) * noise

        pred_prev_sample = mask * prev_known_part + (1.0 - mask) * prev_unknown_part

        if not return_dict:
            return (
                pred_prev_sample,
                pred_original_sample,
            )

        return {"prev_sample": pred_prev_sample, "pred_original_sample": pred_original_sample}

    def undo_step(self, sample, timestep, generator=None):
        n = self.config.num_train_timesteps // self.num_inference_steps

        for i in range(n):
            beta = self.betas[timestep + i]
            noise = torch.randn(sample.shape, generator=generator, device=sample.device)

            sample = (1 - beta) ** 0.5 * sample + beta**0.5 * noise

        return sample


class RePaintLoopBody(nn.Module):
    def __init__(self, eta=1.0):
        super().__init__()
        self.unet = nn.Conv2d(3, 3, 1)
        self.scheduler = RePaintScheduler(eta=eta)
        self.scheduler.set_timesteps(5, jump_length=2, jump_n_sample=2)

    def forward(self, image, t, t_last, original_image, mask, generator=None):
        if t < t_last:
            model_output = self.unet(image)
            image = self.scheduler.step(model_output, t, image, original_image, mask, generator)["prev_sample"]
        else:
            image = self.scheduler.undo_step(image, t_last, generator)
        return image


body = torch.compile(RePaintLoopBody())


def make():
    torch.manual_seed(0)
    model = RePaintLoopBody()
    image = torch.randn(1, 3, 4, 4)
    original_image = torch.randn(1, 3, 4, 4)
    mask = (torch.rand(1, 1, 4, 4) > 0.5).float()
    ts = model.scheduler.timesteps
    return model, [
        (image, ts[0], ts[0] + 1, original_image, mask),
        (image, ts[-1], ts[-2], original_image, mask),
        (image, ts[3], ts[2], original_image, mask),
    ]
