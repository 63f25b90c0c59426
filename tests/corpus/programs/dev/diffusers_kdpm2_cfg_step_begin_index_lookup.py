"""diffusers KDPM2DiscreteScheduler: one compiled classifier-free-guidance step; begin_index unset (nonzero/`.item()` lookup) or set, first or second order.

Source: huggingface/diffusers@58eb52c080:src/diffusers/schedulers/scheduling_k_dpm_2_discrete.py:146-188,190-264,266-410,412-447,570-664
Kept: the scheduler as in the source (set_timesteps runs eagerly at
construction and before the loop), scale_model_input and step with their
`step_index is None` -> _init_step_index -> begin_index / index_for_timestep
(nonzero, len, `.item()`) path, state_in_first_order (`self.sample is None`),
the order-dependent sigma picks, the stored sample and `_step_index += 1`;
one loop body of pipeline_stable_diffusion's denoising loop as the unit
that is compiled (cat for guidance, scale_model_input, unet, chunk, step).
Simplified: ConfigMixin becomes a plain config class; 100 train timesteps,
3 inference steps; karras/exponential/beta conversions dropped (flags off);
tiny conv UNet; plain output dataclass.
"""
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass
class KDPM2DiscreteSchedulerOutput:
    prev_sample: torch.Tensor
    pred_original_sample: torch.Tensor = None


class KDPM2Config:
    num_train_timesteps = 100
    beta_start = 0.00085
    beta_end = 0.012
    beta_schedule = "scaled_linear"
    use_karras_sigmas = False
    prediction_type = "epsilon"
    timestep_spacing = "linspace"
    steps_offset = 0


class KDPM2DiscreteScheduler:
    order = 2

    def __init__(self, config=None):
        self.config = config or KDPM2Config()
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

        #  set all values
        self.set_timesteps(num_train_timesteps, None, num_train_timesteps)

        self._step_index = None
        self._begin_index = None
        self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication

    @property
    def init_noise_sigma(self):
        if self.config.timestep_spacing in ["linspace", "trailing"]:
            return self.sigmas.max()

        return (self.sigmas.max() ** 2 + 1) ** 0.5

    @property
    def step_index(self):
        return self._step_index

    @property
    def begin_index(self):
        return self._begin_index

    def set_begin_index(self, begin_index=0):
        self._begin_index = begin_index

    def scale_model_input(self, sample, timestep):
        if self.step_index is None:
            self._init_step_index(timestep)

        if self.state_in_first_order:
            sigma = self.sigmas[self.step_index]
        else:
            sigma = self.sigmas_interpol[self.step_index]

        sample = sample / ((sigma**2 + 1) ** 0.5)
        return sample

    def set_timesteps(self, num_inference_steps, device=None, num_train_timesteps=None):
        self.num_inference_steps = num_inference_steps

        num_train_timesteps = num_train_timesteps or self.config.num_train_timesteps

        if self.config.timestep_spacing == "linspace":
            timesteps = np.linspace(0, num_train_timesteps - 1, num_inference_steps, dtype=np.float32)[::-1].copy()
        elif self.config.timestep_spacing == "leading":
            step_ratio = num_train_timesteps // self.num_inference_steps
            timesteps = (np.arange(0, num_inference_steps) * step_ratio).round()[::-1].copy().astype(np.float32)
            timesteps += self.config.steps_offset
        elif self.config.timestep_spacing == "trailing":
            step_ratio = num_train_timesteps / self.num_inference_steps
            timesteps = (np.arange(num_train_timesteps, 0, -step_ratio)).round().copy().astype(np.float32)
            timesteps -= 1
        else:
            raise ValueError(
                f"{self.config.timestep_spacing} is not supported. Please make sure to choose one of 'linspace', 'leading' or 'trailing'."
            )

        sigmas = np.array(((1 - self.alphas_cumprod) / self.alphas_cumprod) ** 0.5)
        log_sigmas = np.log(sigmas)
        sigmas = np.interp(timesteps, np.arange(0, len(sigmas)), sigmas)

        if self.config.use_karras_sigmas:
            sigmas = self._convert_to_karras(in_sigmas=sigmas, num_inference_steps=num_inference_steps)
            timesteps = np.array([self._sigma_to_t(sigma, log_sigmas) for sigma in sigmas]).round()

        self.log_sigmas = torch.from_numpy(log_sigmas).to(device=device)
        sigmas = np.concatenate([sigmas, [0.0]]).astype(np.float32)
        sigmas = torch.from_numpy(sigmas).to(device=device)

        # interpolate sigmas
        sigmas_interpol = sigmas.log().lerp(sigmas.roll(1).log(), 0.5).exp()

        self.sigmas = torch.cat([sigmas[:1], sigmas[1:].repeat_interleave(2), sigmas[-1:]])
        self.sigmas_interpol = torch.cat(
            [sigmas_interpol[:1], sigmas_interpol[1:].repeat_interleave(2), sigmas_interpol[-1:]]
        )

        timesteps = torch.from_numpy(timesteps).to(device)

        # interpolate timesteps
        sigmas_interpol = sigmas_interpol.cpu()
        log_sigmas = self.log_sigmas.cpu()
        timesteps_interpol = np.array(
            [self._sigma_to_t(sigma_interpol, log_sigmas) for sigma_interpol in sigmas_interpol]
        )
        timesteps_interpol = torch.from_numpy(timesteps_interpol).to(device, dtype=timesteps.dtype)
        interleaved_timesteps = torch.stack((timesteps_interpol[1:-1, None], timesteps[1:, None]), dim=-1).flatten()

        self.timesteps = torch.cat([timesteps[:1], interleaved_timesteps])

        self.sample = None

        self._step_index = None
        self._begin_index = None
        self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication

    @property
    def state_in_first_order(self):
        return self.sample is None

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

    def _sigma_to_t(self, sigma, log_sigmas):
        # get log sigma
        log_sigma = np.log(np.maximum(sigma, 1e-10))

        # get distribution
        dists = log_sigma - log_sigmas[:, np.newaxis]

        # get sigmas range
        low_idx = np.cumsum((dists >= 0), axis=0).argmax(axis=0).clip(max=log_sigmas.shape[0] - 2)
        high_idx = low_idx + 1

        low = log_sigmas[low_idx]
        high = log_sigmas[high_idx]

        # interpolate sigmas
        w = (low - log_sigma) / (low - high)
        w = np.clip(w, 0, 1)

        # transform interpolation to time range
        t = (1 - w) * low_idx + w * high_idx
        t = t.reshape(sigma.shape)
        return t

    def step(self, model_output, timestep, sample, return_dict=True):
        if self.step_index is None:
            self._init_step_index(timestep)

        if self.state_in_first_order:
            sigma = self.sigmas[self.step_index]
            sigma_interpol = self.sigmas_interpol[self.step_index + 1]
            sigma_next = self.sigmas[self.step_index + 1]
        else:
            # 2nd order / KDPM2's method
            sigma = self.sigmas[self.step_index - 1]
            sigma_interpol = self.sigmas_interpol[self.step_index]
            sigma_next = self.sigmas[self.step_index]

        # currently only gamma=0 is supported. This usually works best anyways.
        gamma = 0
        sigma_hat = sigma * (gamma + 1)  # Note: sigma_hat == sigma for now

        # 1. compute predicted original sample (x_0) from sigma-scaled predicted noise
        if self.config.prediction_type == "epsilon":
            sigma_input = sigma_hat if self.state_in_first_order else sigma_interpol
            pred_original_sample = sample - sigma_input * model_output
        elif self.config.prediction_type == "v_prediction":
            sigma_input = sigma_hat if self.state_in_first_order else sigma_interpol
            pred_original_sample = model_output * (-sigma_input / (sigma_input**2 + 1) ** 0.5) + (
                sample / (sigma_input**2 + 1)
            )
        elif self.config.prediction_type == "sample":
            raise NotImplementedError("prediction_type not implemented yet: sample")
        else:
            raise ValueError(
                f"prediction_type given as {self.config.prediction_type} must be one of `epsilon`, or `v_prediction`"
            )

        if self.state_in_first_order:
            # 2. Convert to an ODE derivative for 1st order
            derivative = (sample - pred_original_sample) / sigma_hat
            # 3. delta timestep
            dt = sigma_interpol - sigma_hat

            # store for 2nd order step
            self.sample = sample
        else:
            # DPM-Solver-2
            # 2. Convert to an ODE derivative for 2nd order
            derivative = (sample - pred_original_sample) / sigma_interpol

            # 3. delta timestep
            dt = sigma_next - sigma_hat

            sample = self.sample
            self.sample = None

        # upon completion increase step index by one
        self._step_index += 1

        prev_sample = sample + derivative * dt

        if not return_dict:
            return (
                prev_sample,
                pred_original_sample,
            )

        return KDPM2DiscreteSchedulerOutput(prev_sample=prev_sample, pred_original_sample=pred_original_sample)


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


@torch.compile
def denoising_step(unet, scheduler, latents, t, prompt_embeds, guidance_scale=7.5):
    latent_model_input = torch.cat([latents] * 2)
    latent_model_input = scheduler.scale_model_input(latent_model_input, t)

    noise_pred = unet(latent_model_input, t, encoder_hidden_states=prompt_embeds, return_dict=False)[0]

    noise_pred_uncond, noise_pred_text = noise_pred.chunk(2)
    noise_pred = noise_pred_uncond + guidance_scale * (noise_pred_text - noise_pred_uncond)

    latents = scheduler.step(noise_pred, t, latents, return_dict=False)[0]
    return latents


def _scheduler(begin_index=None, second_order=False):
    scheduler = KDPM2DiscreteScheduler()
    scheduler.set_timesteps(3, device="cpu")
    if begin_index is not None:
        scheduler.set_begin_index(begin_index)
    if second_order:
        # state after the first (first-order) step of the loop
        scheduler._step_index = 1
        scheduler.sample = torch.randn(1, 4, 8, 8)
    return scheduler


def make():
    torch.manual_seed(0)
    unet = TinyUNet()
    latents = torch.randn(1, 4, 8, 8)
    prompt_embeds = torch.randn(2, 3, 8)
    first = _scheduler()
    img2img = _scheduler(begin_index=2)
    second = _scheduler(second_order=True)
    return denoising_step._torchdynamo_orig_callable, [
        (unet, first, latents, first.timesteps[0], prompt_embeds),
        (unet, img2img, latents, img2img.timesteps[2], prompt_embeds),
        (unet, second, latents, second.timesteps[1], prompt_embeds),
    ]
