"""diffusers EDMEulerScheduler.add_noise in an EDM training step: per-timestep index_for_timestep list comprehension (.item()).

Source: huggingface/diffusers@06bb13644174125eb79f83c7692e6e034d5e737a:src/diffusers/schedulers/scheduling_edm_euler.py:49-190,266-310,411-449
Kept: __init__ (karras sigmas, precondition_noise timesteps,
final_sigmas_type), index_for_timestep (nonzero, len, .item()), add_noise with
the mps/float check, the begin_index / step_index branches, the list
comprehension over timesteps, sigma flatten and the unsqueeze while-loop;
precondition_inputs / precondition_outputs with the prediction_type switch.
Simplified: register_to_config becomes a plain config object; the training
step is the EDM branch of diffusers' SDXL DreamBooth LoRA script (timesteps
drawn from scheduler.timesteps by index, add_noise, precondition_inputs,
model, precondition_outputs, weighted MSE) with a 1x1 conv as the UNet;
num_train_timesteps is 50.
"""
import logging
import math
from dataclasses import dataclass
from typing import List, Optional, Tuple, Union

import torch

logger = logging.getLogger(__name__)  # pylint: disable=invalid-name


@dataclass
class EDMEulerSchedulerOutput:
    prev_sample: torch.Tensor
    pred_original_sample: Optional[torch.Tensor] = None


class SchedulerConfig:
    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)


class EDMEulerScheduler:
    order = 1

    def __init__(
        self,
        sigma_min: float = 0.002,
        sigma_max: float = 80.0,
        sigma_data: float = 0.5,
        sigma_schedule: str = "karras",
        num_train_timesteps: int = 1000,
        prediction_type: str = "epsilon",
        rho: float = 7.0,
        final_sigmas_type: str = "zero",  # can be "zero" or "sigma_min"
    ):
        self.config = SchedulerConfig(
            sigma_min=sigma_min, sigma_max=sigma_max, sigma_data=sigma_data, sigma_schedule=sigma_schedule,
            num_train_timesteps=num_train_timesteps, prediction_type=prediction_type, rho=rho,
            final_sigmas_type=final_sigmas_type,
        )
        if sigma_schedule not in ["karras", "exponential"]:
            raise ValueError(f"Wrong value for provided for `{sigma_schedule=}`.`")

        # setable values
        self.num_inference_steps = None

        sigmas_dtype = torch.float32 if torch.backends.mps.is_available() else torch.float64
        sigmas = torch.arange(num_train_timesteps + 1, dtype=sigmas_dtype) / num_train_timesteps
        if sigma_schedule == "karras":
            sigmas = self._compute_karras_sigmas(sigmas)
        elif sigma_schedule == "exponential":
            sigmas = self._compute_exponential_sigmas(sigmas)
        sigmas = sigmas.to(torch.float32)

        self.timesteps = self.precondition_noise(sigmas)

        if self.config.final_sigmas_type == "sigma_min":
            sigma_last = sigmas[-1]
        elif self.config.final_sigmas_type == "zero":
            sigma_last = 0
        else:
            raise ValueError(
                f"`final_sigmas_type` must be one of 'zero', or 'sigma_min', but got {self.config.final_sigmas_type}"
            )

        self.sigmas = torch.cat([sigmas, torch.full((1,), fill_value=sigma_last, device=sigmas.device)])

        self.is_scale_input_called = False

        self._step_index = None
        self._begin_index = None
        self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication

    @property
    def init_noise_sigma(self):
        # standard deviation of the initial noise distribution
        return (self.config.sigma_max**2 + 1) ** 0.5

    @property
    def step_index(self):
        return self._step_index

    @property
    def begin_index(self):
        return self._begin_index

    def set_begin_index(self, begin_index: int = 0):
        self._begin_index = begin_index

    def precondition_inputs(self, sample, sigma):
        c_in = self._get_conditioning_c_in(sigma)
        scaled_sample = sample * c_in
        return scaled_sample

    def precondition_noise(self, sigma):
        if not isinstance(sigma, torch.Tensor):
            sigma = torch.tensor([sigma])

        c_noise = 0.25 * torch.log(sigma)

        return c_noise

    def precondition_outputs(self, sample, model_output, sigma):
        sigma_data = self.config.sigma_data
        c_skip = sigma_data**2 / (sigma**2 + sigma_data**2)

        if self.config.prediction_type == "epsilon":
            c_out = sigma * sigma_data / (sigma**2 + sigma_data**2) ** 0.5
        elif self.config.prediction_type == "v_prediction":
            c_out = -sigma * sigma_data / (sigma**2 + sigma_data**2) ** 0.5
        else:
            raise ValueError(f"Prediction type {self.config.prediction_type} is not supported.")

        denoised = c_skip * sample + c_out * model_output

        return denoised

    def _compute_karras_sigmas(self, ramp, sigma_min=None, sigma_max=None) -> torch.Tensor:
        """Constructs the noise schedule of Karras et al. (2022)."""
        sigma_min = sigma_min or self.config.sigma_min
        sigma_max = sigma_max or self.config.sigma_max

        rho = self.config.rho
        min_inv_rho = sigma_min ** (1 / rho)
        max_inv_rho = sigma_max ** (1 / rho)
        sigmas = (max_inv_rho + ramp * (min_inv_rho - max_inv_rho)) ** rho
        return sigmas

    def _compute_exponential_sigmas(self, ramp, sigma_min=None, sigma_max=None) -> torch.Tensor:
        sigma_min = sigma_min or self.config.sigma_min
        sigma_max = sigma_max or self.config.sigma_max
        sigmas = torch.linspace(math.log(sigma_min), math.log(sigma_max), len(ramp)).exp().flip(0)
        return sigmas

    def index_for_timestep(self, timestep, schedule_timesteps=None):
        if schedule_timesteps is None:
            schedule_timesteps = self.timesteps

        indices = (schedule_timesteps == timestep).nonzero()

        # The sigma index that is taken for the **very** first `step`
        # is always the second index (or the last index if there is only 1)
        pos = 1 if len(indices) > 1 else 0

        return indices[pos].item()

    def add_noise(
        self,
        original_samples: torch.Tensor,
        noise: torch.Tensor,
        timesteps: torch.Tensor,
    ) -> torch.Tensor:
        # Make sure sigmas and timesteps have the same device and dtype as original_samples
        sigmas = self.sigmas.to(device=original_samples.device, dtype=original_samples.dtype)
        if original_samples.device.type == "mps" and torch.is_floating_point(timesteps):
            # mps does not support float64
            schedule_timesteps = self.timesteps.to(original_samples.device, dtype=torch.float32)
            timesteps = timesteps.to(original_samples.device, dtype=torch.float32)
        else:
            schedule_timesteps = self.timesteps.to(original_samples.device)
            timesteps = timesteps.to(original_samples.device)

        # self.begin_index is None when scheduler is used for training, or pipeline does not implement set_begin_index
        if self.begin_index is None:
            step_indices = [self.index_for_timestep(t, schedule_timesteps) for t in timesteps]
        elif self.step_index is not None:
            # add_noise is called after first denoising step (for inpainting)
            step_indices = [self.step_index] * timesteps.shape[0]
        else:
            # add noise is called before first denoising step to create initial latent(img2img)
            step_indices = [self.begin_index] * timesteps.shape[0]

        sigma = sigmas[step_indices].flatten()
        while len(sigma.shape) < len(original_samples.shape):
            sigma = sigma.unsqueeze(-1)

        noisy_samples = original_samples + noise * sigma
        return noisy_samples

    def _get_conditioning_c_in(self, sigma):
        c_in = 1 / ((sigma**2 + self.config.sigma_data**2) ** 0.5)
        return c_in

    def __len__(self):
        return self.config.num_train_timesteps


class EDMTrainingStep(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.unet = torch.nn.Conv2d(4, 4, 1)
        self.noise_scheduler = EDMEulerScheduler(num_train_timesteps=50)

    def forward(self, model_input, noise, indices):
        timesteps = self.noise_scheduler.timesteps[indices].to(device=model_input.device)

        # Add noise to the model input according to the noise magnitude at each timestep
        # (this is the forward diffusion process)
        noisy_model_input = self.noise_scheduler.add_noise(model_input, noise, timesteps)
        sigmas = self.noise_scheduler.sigmas.to(device=model_input.device, dtype=model_input.dtype)
        sigmas = sigmas[indices].flatten()
        while len(sigmas.shape) < model_input.ndim:
            sigmas = sigmas.unsqueeze(-1)
        inp_noisy_latents = self.noise_scheduler.precondition_inputs(noisy_model_input, sigmas)

        model_pred = self.unet(inp_noisy_latents)
        model_pred = self.noise_scheduler.precondition_outputs(noisy_model_input, model_pred, sigmas)

        weighting = (sigmas**-2.0).float()
        target = model_input
        loss = torch.mean(
            (weighting.float() * (model_pred.float() - target.float()) ** 2).reshape(target.shape[0], -1), 1
        )
        return loss.mean()


def train_step_factory():
    return torch.compile(EDMTrainingStep())


def make():
    torch.manual_seed(0)
    x = torch.randn(2, 4, 4, 4)
    noise = torch.randn_like(x)
    indices = torch.tensor([3, 40])
    return EDMTrainingStep(), [(x, noise, indices), (x[:1], noise[:1], torch.tensor([0]))]
