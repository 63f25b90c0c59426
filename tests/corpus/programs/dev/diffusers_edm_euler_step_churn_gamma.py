"""diffusers EDMEulerScheduler in a denoising loop: index_for_timestep .item(), the s_churn gamma chain comparison on a sigma tensor.

Source: huggingface/diffusers@06bb13644174125eb79f83c7692e6e034d5e737a:src/diffusers/schedulers/scheduling_edm_euler.py:49-409
Kept: __init__ (karras/exponential sigmas, precondition_noise timesteps,
final_sigmas_type), set_timesteps, scale_model_input with
_init_step_index / index_for_timestep (nonzero, len, .item()),
precondition_inputs/outputs with the prediction_type switch, and step() with
the integer-timestep ValueError, the is_scale_input_called warning,
`s_tmin <= sigma <= s_tmax` on the sigma tensor, the `gamma > 0` noise
branch via randn_tensor, and `self._step_index += 1`.
Simplified: register_to_config becomes a plain config object; randn_tensor
is reduced to its CPU torch.randn path; the UNet is a 1x1 conv; the loop is
the usual pipeline loop (set_timesteps, init_noise_sigma, scale, predict,
step) with 3 inference steps and s_churn passed through.
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

    def scale_model_input(self, sample: torch.Tensor, timestep: Union[float, torch.Tensor]) -> torch.Tensor:
        if self.step_index is None:
            self._init_step_index(timestep)

        sigma = self.sigmas[self.step_index]
        sample = self.precondition_inputs(sample, sigma)

        self.is_scale_input_called = True
        return sample

    def set_timesteps(
        self,
        num_inference_steps: int = None,
        device: Union[str, torch.device] = None,
        sigmas: Optional[Union[torch.Tensor, List[float]]] = None,
    ):
        self.num_inference_steps = num_inference_steps

        sigmas_dtype = torch.float32 if torch.backends.mps.is_available() else torch.float64
        if sigmas is None:
            sigmas = torch.linspace(0, 1, self.num_inference_steps, dtype=sigmas_dtype)
        elif isinstance(sigmas, float):
            sigmas = torch.tensor(sigmas, dtype=sigmas_dtype)
        else:
            sigmas = sigmas.to(sigmas_dtype)
        if self.config.sigma_schedule == "karras":
            sigmas = self._compute_karras_sigmas(sigmas)
        elif self.config.sigma_schedule == "exponential":
            sigmas = self._compute_exponential_sigmas(sigmas)
        sigmas = sigmas.to(dtype=torch.float32, device=device)

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
        self._step_index = None
        self._begin_index = None
        self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication

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

    def _init_step_index(self, timestep):
        if self.begin_index is None:
            if isinstance(timestep, torch.Tensor):
                timestep = timestep.to(self.timesteps.device)
            self._step_index = self.index_for_timestep(timestep)
        else:
            self._step_index = self._begin_index

    def step(
        self,
        model_output: torch.Tensor,
        timestep: Union[float, torch.Tensor],
        sample: torch.Tensor,
        s_churn: float = 0.0,
        s_tmin: float = 0.0,
        s_tmax: float = float("inf"),
        s_noise: float = 1.0,
        generator: Optional[torch.Generator] = None,
        return_dict: bool = True,
        pred_original_sample: Optional[torch.Tensor] = None,
    ) -> Union[EDMEulerSchedulerOutput, Tuple]:
        if isinstance(timestep, (int, torch.IntTensor, torch.LongTensor)):
            raise ValueError(
                (
                    "Passing integer indices (e.g. from `enumerate(timesteps)`) as timesteps to"
                    " `EDMEulerScheduler.step()` is not supported. Make sure to pass"
                    " one of the `scheduler.timesteps` as a timestep."
                ),
            )

        if not self.is_scale_input_called:
            logger.warning(
                "The `scale_model_input` function should be called before `step` to ensure correct denoising. "
                "See `StableDiffusionPipeline` for a usage example."
            )

        if self.step_index is None:
            self._init_step_index(timestep)

        # Upcast to avoid precision issues when computing prev_sample
        sample = sample.to(torch.float32)

        sigma = self.sigmas[self.step_index]

        gamma = min(s_churn / (len(self.sigmas) - 1), 2**0.5 - 1) if s_tmin <= sigma <= s_tmax else 0.0

        sigma_hat = sigma * (gamma + 1)

        if gamma > 0:
            noise = randn_tensor(
                model_output.shape, dtype=model_output.dtype, device=model_output.device, generator=generator
            )
            eps = noise * s_noise
            sample = sample + eps * (sigma_hat**2 - sigma**2) ** 0.5

        # 1. compute predicted original sample (x_0) from sigma-scaled predicted noise
        if pred_original_sample is None:
            pred_original_sample = self.precondition_outputs(sample, model_output, sigma_hat)

        # 2. Convert to an ODE derivative
        derivative = (sample - pred_original_sample) / sigma_hat

        dt = self.sigmas[self.step_index + 1] - sigma_hat

        prev_sample = sample + derivative * dt

        # Cast sample back to model compatible dtype
        prev_sample = prev_sample.to(model_output.dtype)

        # upon completion increase step index by one
        self._step_index += 1

        if not return_dict:
            return (
                prev_sample,
                pred_original_sample,
            )

        return EDMEulerSchedulerOutput(prev_sample=prev_sample, pred_original_sample=pred_original_sample)

    def _get_conditioning_c_in(self, sigma):
        c_in = 1 / ((sigma**2 + self.config.sigma_data**2) ** 0.5)
        return c_in

    def __len__(self):
        return self.config.num_train_timesteps


def randn_tensor(shape, generator=None, device=None, dtype=None, layout=None):
    layout = layout or torch.strided
    device = device or torch.device("cpu")
    latents = torch.randn(shape, generator=generator, device=device, dtype=dtype, layout=layout)
    return latents


class EDMDenoiser(torch.nn.Module):
    def __init__(self, num_inference_steps=3):
        super().__init__()
        self.unet = torch.nn.Conv2d(4, 4, 1)
        self.scheduler = EDMEulerScheduler()
        self.num_inference_steps = num_inference_steps

    def forward(self, latents, s_churn=0.0):
        self.scheduler.set_timesteps(self.num_inference_steps, device=latents.device)
        timesteps = self.scheduler.timesteps
        latents = latents * self.scheduler.init_noise_sigma
        for i, t in enumerate(timesteps):
            latent_model_input = self.scheduler.scale_model_input(latents, t)
            noise_pred = self.unet(latent_model_input)
            latents = self.scheduler.step(noise_pred, t, latents, s_churn=s_churn, return_dict=False)[0]
        return latents


denoiser = torch.compile(EDMDenoiser())


def make():
    torch.manual_seed(0)
    latents = torch.randn(1, 4, 4, 4)
    return EDMDenoiser(), [(latents,), (latents, 1.0)]
