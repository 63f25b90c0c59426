"""diffusers LMSDiscreteScheduler: K-LMS denoising loop with scipy-style quad over tensor sigmas and a Python list of derivatives.

Source: huggingface/diffusers@00c951229d:src/diffusers/schedulers/scheduling_lms_discrete.py:110-380
Kept: __init__ (linear betas, numpy sigmas), set_timesteps ("linspace",
np.interp, optional karras), scale_model_input, get_lms_coefficient with its
nested lms_derivative product over self.sigmas and integrate.quad,
_init_step_index (nonzero / .item()), step() verbatim: the warnings.warn when
scale_model_input was not called, prediction_type switch, derivatives
append/pop(0), `order = min(self.step_index + 1, order)`, the coefficient
list and the sum over reversed(self.derivatives); the StableDiffusion loop
(set_timesteps, init_noise_sigma, scale_model_input, unet, step) around it.
Simplified: scipy.integrate.quad is a local stand-in (composite Simpson on
floats; it calls float() on its bounds and on the integrand like quad does);
ConfigMixin is a plain config; the UNet is a 1x1 conv; 20 train steps.
"""
import warnings
from typing import List, Optional, Tuple, Union

import numpy as np
import torch
from torch import nn


class integrate:
    @staticmethod
    def quad(func, a, b, epsrel=1.49e-8, n=2):
        a, b = float(a), float(b)
        h = (b - a) / n
        total = float(func(a)) + float(func(b))
        for i in range(1, n):
            total += (4 if i % 2 else 2) * float(func(a + i * h))
        return total * h / 3, epsrel


class Config:
    num_train_timesteps = 20
    beta_start = 0.0001
    beta_end = 0.02
    beta_schedule = "linear"
    prediction_type = "epsilon"
    timestep_spacing = "linspace"
    steps_offset = 0


class LMSDiscreteScheduler:
    order = 1

    def __init__(self, use_karras_sigmas: Optional[bool] = False):
        self.config = Config()
        self.betas = torch.linspace(self.config.beta_start, self.config.beta_end, self.config.num_train_timesteps, dtype=torch.float32)

        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)

        sigmas = np.array(((1 - self.alphas_cumprod) / self.alphas_cumprod) ** 0.5)
        sigmas = np.concatenate([sigmas[::-1], [0.0]]).astype(np.float32)
        self.sigmas = torch.from_numpy(sigmas)

        self.num_inference_steps = None
        self.use_karras_sigmas = use_karras_sigmas
        self.set_timesteps(self.config.num_train_timesteps, None)
        self.derivatives = []
        self.is_scale_input_called = False

        self._step_index = None

    @property
    def init_noise_sigma(self):
        if self.config.timestep_spacing in ["linspace", "trailing"]:
            return self.sigmas.max()

        return (self.sigmas.max() ** 2 + 1) ** 0.5

    @property
    def step_index(self):
        return self._step_index

    def scale_model_input(self, sample: torch.FloatTensor, timestep: Union[float, torch.FloatTensor]) -> torch.FloatTensor:
        if self.step_index is None:
            self._init_step_index(timestep)

        sigma = self.sigmas[self.step_index]
        sample = sample / ((sigma**2 + 1) ** 0.5)
        self.is_scale_input_called = True
        return sample

    def get_lms_coefficient(self, order, t, current_order):
        def lms_derivative(tau):
            prod = 1.0
            for k in range(order):
                if current_order == k:
                    continue
                prod *= (tau - self.sigmas[t - k]) / (self.sigmas[t - current_order] - self.sigmas[t - k])
            return prod

        integrated_coeff = integrate.quad(lms_derivative, self.sigmas[t], self.sigmas[t + 1], epsrel=1e-4)[0]

        return integrated_coeff

    def set_timesteps(self, num_inference_steps: int, device: Union[str, torch.device] = None):
        self.num_inference_steps = num_inference_steps

        if self.config.timestep_spacing == "linspace":
            timesteps = np.linspace(0, self.config.num_train_timesteps - 1, num_inference_steps, dtype=np.float32)[
                ::-1
            ].copy()
        elif self.config.timestep_spacing == "leading":
            step_ratio = self.config.num_train_timesteps // self.num_inference_steps
            timesteps = (np.arange(0, num_inference_steps) * step_ratio).round()[::-1].copy().astype(np.float32)
            timesteps += self.config.steps_offset
        else:
            raise ValueError(
                f"{self.config.timestep_spacing} is not supported. Please make sure to choose one of 'linspace', 'leading' or 'trailing'."
            )

        sigmas = np.array(((1 - self.alphas_cumprod) / self.alphas_cumprod) ** 0.5)
        log_sigmas = np.log(sigmas)
        sigmas = np.interp(timesteps, np.arange(0, len(sigmas)), sigmas)

        if self.use_karras_sigmas:
            sigmas = self._convert_to_karras(in_sigmas=sigmas)

        sigmas = np.concatenate([sigmas, [0.0]]).astype(np.float32)

        self.sigmas = torch.from_numpy(sigmas).to(device=device)
        self.timesteps = torch.from_numpy(timesteps).to(device=device)
        self._step_index = None

        self.derivatives = []

    def _init_step_index(self, timestep):
        if isinstance(timestep, torch.Tensor):
            timestep = timestep.to(self.timesteps.device)

        index_candidates = (self.timesteps == timestep).nonzero()

        if len(index_candidates) > 1:
            step_index = index_candidates[1]
        else:
            step_index = index_candidates[0]

        self._step_index = step_index.item()

    def _convert_to_karras(self, in_sigmas):
        sigma_min: float = in_sigmas[-1].item()
        sigma_max: float = in_sigmas[0].item()

        rho = 7.0
        ramp = np.linspace(0, 1, self.num_inference_steps)
        min_inv_rho = sigma_min ** (1 / rho)
        max_inv_rho = sigma_max ** (1 / rho)
        sigmas = (max_inv_rho + ramp * (min_inv_rho - max_inv_rho)) ** rho
        return sigmas

    def step(
        self,
        model_output: torch.FloatTensor,
        timestep: Union[float, torch.FloatTensor],
        sample: torch.FloatTensor,
        order: int = 4,
        return_dict: bool = True,
    ):
        if not self.is_scale_input_called:
            warnings.warn(
                "The `scale_model_input` function should be called before `step` to ensure correct denoising. "
                "See `StableDiffusionPipeline` for a usage example."
            )

        if self.step_index is None:
            self._init_step_index(timestep)

        sigma = self.sigmas[self.step_index]

        if self.config.prediction_type == "epsilon":
            pred_original_sample = sample - sigma * model_output
        elif self.config.prediction_type == "v_prediction":
            pred_original_sample = model_output * (-sigma / (sigma**2 + 1) ** 0.5) + (sample / (sigma**2 + 1))
        elif self.config.prediction_type == "sample":
            pred_original_sample = model_output
        else:
            raise ValueError(
                f"prediction_type given as {self.config.prediction_type} must be one of `epsilon`, or `v_prediction`"
            )

        derivative = (sample - pred_original_sample) / sigma
        self.derivatives.append(derivative)
        if len(self.derivatives) > order:
            self.derivatives.pop(0)

        order = min(self.step_index + 1, order)
        lms_coeffs = [self.get_lms_coefficient(order, self.step_index, curr_order) for curr_order in range(order)]

        prev_sample = sample + sum(
            coeff * derivative for coeff, derivative in zip(lms_coeffs, reversed(self.derivatives))
        )

        self._step_index += 1

        if not return_dict:
            return (prev_sample,)

        return {"prev_sample": prev_sample, "pred_original_sample": pred_original_sample}


class LMSPipeline(nn.Module):
    def __init__(self):
        super().__init__()
        self.unet = nn.Conv2d(2, 2, 1)
        self.scheduler = LMSDiscreteScheduler()

    def forward(self, latents, num_inference_steps):
        self.scheduler.set_timesteps(num_inference_steps, device=latents.device)
        timesteps = self.scheduler.timesteps
        latents = latents * self.scheduler.init_noise_sigma
        for i, t in enumerate(timesteps):
            latent_model_input = self.scheduler.scale_model_input(latents, t)
            noise_pred = self.unet(latent_model_input)
            latents = self.scheduler.step(noise_pred, t, latents, return_dict=False)[0]
        return latents


pipe = LMSPipeline()
pipe.forward = torch.compile(pipe.forward)


def make():
    torch.manual_seed(0)
    latents = torch.randn(1, 2, 2, 2)
    return LMSPipeline(), [(latents, 3)]
