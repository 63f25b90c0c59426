"""diffusers TCDScheduler.step: `prev_timestep >= 0` on a tensor, an eta (gamma) assert, noise injected unless the step is the last one.

Source: huggingface/diffusers@58eb52c080:src/diffusers/schedulers/scheduling_tcd.py:205-308,594-700
Kept: __init__'s beta schedule / alphas_cumprod / final_alpha_cumprod,
index_for_timestep (nonzero, len, `.item()`) and _init_step_index, the
`num_inference_steps is None` guard, the eta assert, prev_step_index against
len(self.timesteps) (else `torch.tensor(0)`), timestep_s via torch.floor,
`alphas_cumprod[prev_timestep] if prev_timestep >= 0 else ...`, the
prediction_type switch, `eta > 0` and `step_index != num_inference_steps - 1`
noise injection, `_step_index += 1`, the tuple return; the TCD pipeline's
loop body (unet call, guidance, step with eta and generator) as the compiled
unit.
Simplified: ConfigMixin becomes a plain config class; set_timesteps is
replaced by the schedule it yields for 4 steps (timesteps assigned
directly); diffusers' randn_tensor helper becomes torch.randn with the
generator; tiny conv UNet; plain output dataclass.
"""
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass
class TCDSchedulerOutput:
    prev_sample: torch.Tensor
    pred_noised_sample: torch.Tensor = None


class TCDConfig:
    num_train_timesteps = 1000
    beta_start = 0.00085
    beta_end = 0.012
    beta_schedule = "scaled_linear"
    set_alpha_to_one = True
    prediction_type = "epsilon"


class TCDScheduler:
    order = 1

    def __init__(self, config=None):
        self.config = config or TCDConfig()
        num_train_timesteps = self.config.num_train_timesteps
        beta_start, beta_end = self.config.beta_start, self.config.beta_end
        if self.config.beta_schedule == "linear":
            self.betas = torch.linspace(beta_start, beta_end, num_train_timesteps, dtype=torch.float32)
        elif self.config.beta_schedule == "scaled_linear":
            # this schedule is very specific to the latent diffusion model.
            self.betas = torch.linspace(beta_start**0.5, beta_end**0.5, num_train_timesteps, dtype=torch.float32) ** 2
        else:
            raise NotImplementedError(f"{self.config.beta_schedule} is not implemented for {self.__class__}")

        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)

        # At every step in ddim, we are looking into the previous alphas_cumprod
        # For the final step, there is no previous alphas_cumprod because we are already at 0
        self.final_alpha_cumprod = torch.tensor(1.0) if self.config.set_alpha_to_one else self.alphas_cumprod[0]

        # standard deviation of the initial noise distribution
        self.init_noise_sigma = 1.0

        # setable values
        self.num_inference_steps = None
        self.timesteps = torch.from_numpy(np.arange(0, num_train_timesteps)[::-1].copy().astype(np.int64))
        self.custom_timesteps = False

        self._step_index = None
        self._begin_index = None

    def index_for_timestep(self, timestep, schedule_timesteps=None):
        if schedule_timesteps is None:
            schedule_timesteps = self.timesteps

        indices = (schedule_timesteps == timestep).nonzero()

        # The sigma index that is taken for the **very** first `step`
        # is always the second index (or the last index if there is only 1)
        pos = 1 if len(indices) > 1 else 0

        return indices[pos].item()

    def _init_step_index(self, timestep):
        if self.begin_index is None:
            if isinstance(timestep, torch.Tensor):
                timestep = timestep.to(self.timesteps.device)
            self._step_index = self.index_for_timestep(timestep)
        else:
            self._step_index = self._begin_index

    @property
    def step_index(self):
        return self._step_index

    @property
    def begin_index(self):
        return self._begin_index

    def set_begin_index(self, begin_index=0):
        self._begin_index = begin_index

    def scale_model_input(self, sample, timestep=None):
        return sample

    def set_timesteps(self, num_inference_steps, device=None):
        # what set_timesteps(4) computes with original_inference_steps=50, strength=1.0
        self.num_inference_steps = num_inference_steps
        self.timesteps = torch.tensor([999, 759, 499, 259], dtype=torch.long, device=device)[:num_inference_steps]
        self._step_index = None
        self._begin_index = None

    def step(self, model_output, timestep, sample, eta=0.3, generator=None, return_dict=True):
        if self.num_inference_steps is None:
            raise ValueError(
                "Number of inference steps is 'None', you need to run 'set_timesteps' after creating the scheduler"
            )

        if self.step_index is None:
            self._init_step_index(timestep)

        assert 0 <= eta <= 1.0, "gamma must be less than or equal to 1.0"

        # 1. get previous step value
        prev_step_index = self.step_index + 1
        if prev_step_index < len(self.timesteps):
            prev_timestep = self.timesteps[prev_step_index]
        else:
            prev_timestep = torch.tensor(0)

        timestep_s = torch.floor((1 - eta) * prev_timestep).to(dtype=torch.long)

        # 2. compute alphas, betas
        alpha_prod_t = self.alphas_cumprod[timestep]
        beta_prod_t = 1 - alpha_prod_t

        alpha_prod_t_prev = self.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else self.final_alpha_cumprod

        alpha_prod_s = self.alphas_cumprod[timestep_s]
        beta_prod_s = 1 - alpha_prod_s

        # 3. Compute the predicted noised sample x_s based on the model parameterization
        if self.config.prediction_type == "epsilon":  # noise-prediction
            pred_original_sample = (sample - beta_prod_t.sqrt() * model_output) / alpha_prod_t.sqrt()
            pred_epsilon = model_output
            pred_noised_sample = alpha_prod_s.sqrt() * pred_original_sample + beta_prod_s.sqrt() * pred_epsilon
        elif self.config.prediction_type == "sample":  # x-prediction
            pred_original_sample = model_output
            pred_epsilon = (sample - alpha_prod_t ** (0.5) * pred_original_sample) / beta_prod_t ** (0.5)
            pred_noised_sample = alpha_prod_s.sqrt() * pred_original_sample + beta_prod_s.sqrt() * pred_epsilon
        elif self.config.prediction_type == "v_prediction":  # v-prediction
            pred_original_sample = (alpha_prod_t**0.5) * sample - (beta_prod_t**0.5) * model_output
            pred_epsilon = (alpha_prod_t**0.5) * model_output + (beta_prod_t**0.5) * sample
            pred_noised_sample = alpha_prod_s.sqrt() * pred_original_sample + beta_prod_s.sqrt() * pred_epsilon
        else:
            raise ValueError(
                f"prediction_type given as {self.config.prediction_type} must be one of `epsilon`, `sample` or"
                " `v_prediction` for `TCDScheduler`."
            )

        # 4. Sample and inject noise z ~ N(0, I) for MultiStep Inference
        # Noise is not used on the final timestep of the timestep schedule.
        if eta > 0:
            if self.step_index != self.num_inference_steps - 1:
                noise = torch.randn(
                    model_output.shape, generator=generator, device=model_output.device, dtype=pred_noised_sample.dtype
                )
                prev_sample = (alpha_prod_t_prev / alpha_prod_s).sqrt() * pred_noised_sample + (
                    1 - alpha_prod_t_prev / alpha_prod_s
                ).sqrt() * noise
            else:
                prev_sample = pred_noised_sample
        else:
            prev_sample = pred_noised_sample

        # upon completion increase step index by one
        self._step_index += 1

        if not return_dict:
            return (prev_sample, pred_noised_sample)

        return TCDSchedulerOutput(prev_sample=prev_sample, pred_noised_sample=pred_noised_sample)


class TinyUNet(nn.Module):
    def __init__(self, channels=4, cross_dim=8):
        super().__init__()
        self.conv_in = nn.Conv2d(channels, 8, 3, padding=1)
        self.time_proj = nn.Linear(1, 8)
        self.ctx_proj = nn.Linear(cross_dim, 8)
        self.conv_out = nn.Conv2d(8, channels, 3, padding=1)

    def forward(self, sample, timestep, encoder_hidden_states=None, return_dict=True):
        t_emb = self.time_proj(timestep.reshape(1, 1).to(sample.dtype) / 1000.0)
        h = self.conv_in(sample) + t_emb[:, :, None, None]
        if encoder_hidden_states is not None:
            h = h + self.ctx_proj(encoder_hidden_states.mean(1))[:, :, None, None]
        out = self.conv_out(torch.nn.functional.silu(h))
        if not return_dict:
            return (out,)
        return {"sample": out}


def tcd_denoising_step(unet, scheduler, latents, t, prompt_embeds, eta=0.3, generator=None, guidance_scale=1.5):
    latent_model_input = torch.cat([latents] * 2)
    latent_model_input = scheduler.scale_model_input(latent_model_input, t)

    noise_pred = unet(latent_model_input, t, encoder_hidden_states=prompt_embeds, return_dict=False)[0]

    noise_pred_uncond, noise_pred_text = noise_pred.chunk(2)
    noise_pred = noise_pred_uncond + guidance_scale * (noise_pred_text - noise_pred_uncond)

    extra_step_kwargs = {"eta": eta, "generator": generator}
    latents = scheduler.step(noise_pred, t, latents, **extra_step_kwargs, return_dict=False)[0]
    return latents


step_fn = torch.compile(tcd_denoising_step, mode="reduce-overhead")


def _scheduler(begin_index=None):
    scheduler = TCDScheduler()
    scheduler.set_timesteps(4, device="cpu")
    if begin_index is not None:
        scheduler.set_begin_index(begin_index)
    return scheduler


def make():
    torch.manual_seed(0)
    unet = TinyUNet()
    latents = torch.randn(1, 4, 8, 8)
    prompt_embeds = torch.randn(2, 3, 8)
    first = _scheduler()
    last = _scheduler(begin_index=3)
    det = _scheduler(begin_index=1)
    return tcd_denoising_step, [
        (unet, first, latents, first.timesteps[0], prompt_embeds, 0.3, torch.Generator().manual_seed(0)),
        (unet, last, latents, last.timesteps[3], prompt_embeds, 0.3),
        (unet, det, latents, det.timesteps[1], prompt_embeds, 0.0),
    ]
