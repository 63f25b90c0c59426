"""diffusers CMStochasticIterativeScheduler in a compiled consistency-model sampling call: numpy Karras schedule in set_timesteps, `_init_step_index` via `(self.timesteps == timestep).nonzero()` + `.item()`, isinstance guards on the timestep, onestep vs multistep noise.

Source: huggingface/diffusers@90281cb924338f3edde83e114a2735df600eb59b:src/diffusers/schedulers/scheduling_consistency_models.py:29-380
Kept: __init__ (numpy ramp -> _convert_to_karras -> sigma_to_t,
torch.from_numpy), step_index property, scale_model_input, sigma_to_t,
set_timesteps (both validation errors, the num_inference_steps path with
numpy arange/round/[::-1].copy(), the Karras mapping, the concatenation
with `self.sigma_min`, the mps string check, `_step_index = None`),
_convert_to_karras, get_scalings_for_boundary_condition, _init_step_index
(len(index_candidates) > 1 pick, .item()), step (the int/IntTensor/
LongTensor ValueError guard, the is_scale_input_called logger warning,
sigma/sigma_next pick, clip_denoised, `len(self.timesteps) > 1` noise,
clamp, `_step_index += 1`, tuple/output return); the multistep loop of
ConsistencyModelPipeline.__call__ (scale_model_input -> unet -> step(...)[0]).
Simplified: ConfigMixin becomes a config object plus a __getattr__ that
serves config names (what lets `self.sigma_min` resolve; its deprecation
message is dropped); randn_tensor is torch.randn with the generator; the
UNet is a tiny class-conditional conv; 40 train steps, 2 inference steps.
"""
import logging
from dataclasses import dataclass
from typing import List, Optional, Union

import numpy as np
import torch
from torch import nn

logger = logging.getLogger(__name__)  # pylint: disable=invalid-name


@dataclass
class CMStochasticIterativeSchedulerOutput:
    prev_sample: torch.FloatTensor

    def __getitem__(self, idx):
        return (self.prev_sample,)[idx]


def randn_tensor(shape, generator=None, device=None, dtype=None):
    return torch.randn(shape, generator=generator, device=device, dtype=dtype)


class SchedulerConfig(dict):
    def __getattr__(self, name):
        return self[name]


class CMStochasticIterativeScheduler:
    order = 1

    def __init__(
        self,
        num_train_timesteps: int = 40,
        sigma_min: float = 0.002,
        sigma_max: float = 80.0,
        sigma_data: float = 0.5,
        s_noise: float = 1.0,
        rho: float = 7.0,
        clip_denoised: bool = True,
    ):
        self._internal_dict = SchedulerConfig(
            num_train_timesteps=num_train_timesteps, sigma_min=sigma_min, sigma_max=sigma_max,
            sigma_data=sigma_data, s_noise=s_noise, rho=rho, clip_denoised=clip_denoised,
        )
        # standard deviation of the initial noise distribution
        self.init_noise_sigma = sigma_max

        ramp = np.linspace(0, 1, num_train_timesteps)
        sigmas = self._convert_to_karras(ramp)
        timesteps = self.sigma_to_t(sigmas)

        # setable values
        self.num_inference_steps = None
        self.sigmas = torch.from_numpy(sigmas)
        self.timesteps = torch.from_numpy(timesteps)
        self.custom_timesteps = False
        self.is_scale_input_called = False
        self._step_index = None

    @property
    def config(self):
        return self._internal_dict

    def __getattr__(self, name):
        is_in_config = "_internal_dict" in self.__dict__ and name in self.__dict__["_internal_dict"]
        if is_in_config:
            return self.__dict__["_internal_dict"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    @property
    def step_index(self):
        return self._step_index

    def scale_model_input(self, sample, timestep):
        # Get sigma corresponding to timestep
        if self.step_index is None:
            self._init_step_index(timestep)

        sigma = self.sigmas[self.step_index]

        sample = sample / ((sigma**2 + self.config.sigma_data**2) ** 0.5)

        self.is_scale_input_called = True
        return sample

    def sigma_to_t(self, sigmas: Union[float, np.ndarray]):
        if not isinstance(sigmas, np.ndarray):
            sigmas = np.array(sigmas, dtype=np.float64)

        timesteps = 1000 * 0.25 * np.log(sigmas + 1e-44)

        return timesteps

    def set_timesteps(
        self,
        num_inference_steps: Optional[int] = None,
        device: Union[str, torch.device] = None,
        timesteps: Optional[List[int]] = None,
    ):
        if num_inference_steps is None and timesteps is None:
            raise ValueError("Exactly one of `num_inference_steps` or `timesteps` must be supplied.")

        if num_inference_steps is not None and timesteps is not None:
            raise ValueError("Can only pass one of `num_inference_steps` or `timesteps`.")

        # Follow DDPMScheduler custom timesteps logic
        if timesteps is not None:
            for i in range(1, len(timesteps)):
                if timesteps[i] >= timesteps[i - 1]:
                    raise ValueError("`timesteps` must be in descending order.")

            if timesteps[0] >= self.config.num_train_timesteps:
                raise ValueError(
                    f"`timesteps` must start before `self.config.train_timesteps`:"
                    f" {self.config.num_train_timesteps}."
                )

            timesteps = np.array(timesteps, dtype=np.int64)
            self.custom_timesteps = True
        else:
            if num_inference_steps > self.config.num_train_timesteps:
                raise ValueError(
                    f"`num_inference_steps`: {num_inference_steps} cannot be larger than `self.config.train_timesteps`:"
                    f" {self.config.num_train_timesteps} as the unet model trained with this scheduler can only handle"
                    f" maximal {self.config.num_train_timesteps} timesteps."
                )

            self.num_inference_steps = num_inference_steps

            step_ratio = self.config.num_train_timesteps // self.num_inference_steps
            timesteps = (np.arange(0, num_inference_steps) * step_ratio).round()[::-1].copy().astype(np.int64)
            self.custom_timesteps = False

        # Map timesteps to Karras sigmas directly for multistep sampling
        num_train_timesteps = self.config.num_train_timesteps
        ramp = timesteps[::-1].copy()
        ramp = ramp / (num_train_timesteps - 1)
        sigmas = self._convert_to_karras(ramp)
        timesteps = self.sigma_to_t(sigmas)

        sigmas = np.concatenate([sigmas, [self.sigma_min]]).astype(np.float32)
        self.sigmas = torch.from_numpy(sigmas).to(device=device)

        if str(device).startswith("mps"):
            # mps does not support float64
            self.timesteps = torch.from_numpy(timesteps).to(device, dtype=torch.float32)
        else:
            self.timesteps = torch.from_numpy(timesteps).to(device=device)

        self._step_index = None

    # Modified _convert_to_karras implementation that takes in ramp as argument
    def _convert_to_karras(self, ramp):
        """Constructs the noise schedule of Karras et al. (2022)."""

        sigma_min: float = self.config.sigma_min
        sigma_max: float = self.config.sigma_max

        rho = self.config.rho
        min_inv_rho = sigma_min ** (1 / rho)
        max_inv_rho = sigma_max ** (1 / rho)
        sigmas = (max_inv_rho + ramp * (min_inv_rho - max_inv_rho)) ** rho
        return sigmas

    def get_scalings_for_boundary_condition(self, sigma):
        sigma_min = self.config.sigma_min
        sigma_data = self.config.sigma_data

        c_skip = sigma_data**2 / ((sigma - sigma_min) ** 2 + sigma_data**2)
        c_out = (sigma - sigma_min) * sigma_data / (sigma**2 + sigma_data**2) ** 0.5
        return c_skip, c_out

    def _init_step_index(self, timestep):
        if isinstance(timestep, torch.Tensor):
            timestep = timestep.to(self.timesteps.device)

        index_candidates = (self.timesteps == timestep).nonzero()

        # The sigma index that is taken for the **very** first `step`
        # is always the second index (or the last index if there is only 1)
        if len(index_candidates) > 1:
            step_index = index_candidates[1]
        else:
            step_index = index_candidates[0]

        self._step_index = step_index.item()

    def step(self, model_output, timestep, sample, generator=None, return_dict=True):
        if (
            isinstance(timestep, int)
            or isinstance(timestep, torch.IntTensor)
            or isinstance(timestep, torch.LongTensor)
        ):
            raise ValueError(
                (
                    "Passing integer indices (e.g. from `enumerate(timesteps)`) as timesteps to"
                    f" `{self.__class__}.step()` is not supported. Make sure to pass"
                    " one of the `scheduler.timesteps` as a timestep."
                ),
            )

        if not self.is_scale_input_called:
            logger.warning(
                "The `scale_model_input` function should be called before `step` to ensure correct denoising. "
                "See `StableDiffusionPipeline` for a usage example."
            )

        sigma_min = self.config.sigma_min
        sigma_max = self.config.sigma_max

        if self.step_index is None:
            self._init_step_index(timestep)

        # sigma_next corresponds to next_t in original implementation
        sigma = self.sigmas[self.step_index]
        if self.step_index + 1 < self.config.num_train_timesteps:
            sigma_next = self.sigmas[self.step_index + 1]
        else:
            # Set sigma_next to sigma_min
            sigma_next = self.sigmas[-1]

        # Get scalings for boundary conditions
        c_skip, c_out = self.get_scalings_for_boundary_condition(sigma)

        # 1. Denoise model output using boundary conditions
        denoised = c_out * model_output + c_skip * sample
        if self.config.clip_denoised:
            denoised = denoised.clamp(-1, 1)

        # 2. Sample z ~ N(0, s_noise^2 * I)
        # Noise is not used for onestep sampling.
        if len(self.timesteps) > 1:
            noise = randn_tensor(
                model_output.shape, dtype=model_output.dtype, device=model_output.device, generator=generator
            )
        else:
            noise = torch.zeros_like(model_output)
        z = noise * self.config.s_noise

        sigma_hat = sigma_next.clamp(min=sigma_min, max=sigma_max)

        # 3. Return noisy sample
        # tau = sigma_hat, eps = sigma_min
        prev_sample = denoised + z * (sigma_hat**2 - sigma_min**2) ** 0.5

        # upon completion increase step index by one
        self._step_index += 1

        if not return_dict:
            return (prev_sample,)

        return CMStochasticIterativeSchedulerOutput(prev_sample=prev_sample)


class TinyClassCondUNet(nn.Module):
    def __init__(self, channels=3, num_classes=10):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.class_emb = nn.Embedding(num_classes, channels)
        self.time_proj = nn.Linear(1, channels)

    def forward(self, sample, timestep, class_labels=None, return_dict=True):
        t = timestep.to(sample.dtype).reshape(1, 1) / 1000.0
        emb = self.time_proj(t)
        if class_labels is not None:
            emb = emb + self.class_emb(class_labels)
        out = self.conv(sample) + emb[:, :, None, None]
        if not return_dict:
            return (out,)
        return {"sample": out}


class ConsistencyModelPipeline:
    def __init__(self, unet, scheduler):
        self.unet = unet
        self.scheduler = scheduler

    @torch.no_grad()
    def __call__(self, batch_size=1, class_labels=None, num_inference_steps=1, generator=None):
        shape = (batch_size, 3, 8, 8)
        sample = randn_tensor(shape, generator=generator) * self.scheduler.init_noise_sigma

        self.scheduler.set_timesteps(num_inference_steps)
        timesteps = self.scheduler.timesteps

        # Multistep sampling: implements Algorithm 1 in the paper
        for i, t in enumerate(timesteps):
            scaled_sample = self.scheduler.scale_model_input(sample, t)
            model_output = self.unet(scaled_sample, t, class_labels=class_labels, return_dict=False)[0]

            sample = self.scheduler.step(model_output, t, sample, generator=generator)[0]

        sample = (sample / 2 + 0.5).clamp(0, 1)
        return sample


def build_pipeline():
    return ConsistencyModelPipeline(TinyClassCondUNet(), CMStochasticIterativeScheduler(num_train_timesteps=40))


pipe = build_pipeline()
pipe_call = torch.compile(pipe.__call__)


def make():
    torch.manual_seed(0)
    pipe = build_pipeline()
    labels = torch.tensor([1, 7])
    return pipe.__call__, [(2, labels, 2), (2, labels, 1)]
