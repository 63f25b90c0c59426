"""diffusers EulerAncestralDiscreteScheduler.step without scale_model_input: logger.warning, then index_for_timestep's nonzero/.item().

Source: huggingface/diffusers@58eb52c080:src/diffusers/schedulers/scheduling_euler_ancestral_discrete.py:330-476
Kept: the integer-timestep ValueError, the `not self.is_scale_input_called`
logger.warning, _init_step_index / index_for_timestep (nonzero, len, .item()),
the prediction_type switch with the NotImplementedError for "sample", the
ancestral sigma_up / sigma_down split, the noise add and `_step_index += 1`.
Simplified: 4 sigmas; randn instead of randn_tensor; the "UNet" is linear and
the pipeline forgets scale_model_input (the warning path).
"""
import logging

import torch

logger = logging.getLogger(__name__)


class Config:
    prediction_type = "epsilon"


class EulerAncestralDiscreteScheduler:
    def __init__(self):
        self.config = Config()
        self.timesteps = torch.tensor([999.0, 666.0, 333.0, 0.0])
        self.sigmas = torch.tensor([14.6, 4.0, 1.0, 0.1, 0.0])
        self._step_index = None
        self._begin_index = None
        self.is_scale_input_called = False

    @property
    def step_index(self):
        return self._step_index

    def index_for_timestep(self, timestep, schedule_timesteps=None):
        if schedule_timesteps is None:
            schedule_timesteps = self.timesteps
        indices = (schedule_timesteps == timestep).nonzero()
        pos = 1 if len(indices) > 1 else 0
        return indices[pos].item()

    def _init_step_index(self, timestep):
        if self._begin_index is None:
            if isinstance(timestep, torch.Tensor):
                timestep = timestep.to(self.timesteps.device)
            self._step_index = self.index_for_timestep(timestep)
        else:
            self._step_index = self._begin_index

    def step(self, model_output, timestep, sample, generator=None, return_dict=True):
        if isinstance(timestep, (int, torch.IntTensor, torch.LongTensor)):
            raise ValueError("Passing integer indices (e.g. from `enumerate(timesteps)`) as timesteps is not supported.")
        if not self.is_scale_input_called:
            logger.warning(
                "The `scale_model_input` function should be called before `step` to ensure correct denoising. "
                "See `StableDiffusionPipeline` for a usage example."
            )
        if self.step_index is None:
            self._init_step_index(timestep)
        sigma = self.sigmas[self.step_index]
        sample = sample.to(torch.float32)
        if self.config.prediction_type == "epsilon":
            pred_original_sample = sample - sigma * model_output
        elif self.config.prediction_type == "sample":
            raise NotImplementedError("prediction_type not implemented yet: sample")
        else:
            raise ValueError(f"prediction_type given as {self.config.prediction_type} must be one of `epsilon`, or `v_prediction`")
        sigma_from = self.sigmas[self.step_index]
        sigma_to = self.sigmas[self.step_index + 1]
        sigma_up = (sigma_to**2 * (sigma_from**2 - sigma_to**2) / sigma_from**2) ** 0.5
        sigma_down = (sigma_to**2 - sigma_up**2) ** 0.5
        derivative = (sample - pred_original_sample) / sigma
        dt = sigma_down - sigma
        prev_sample = sample + derivative * dt
        noise = torch.randn(model_output.shape, dtype=model_output.dtype, device=model_output.device, generator=generator)
        prev_sample = prev_sample + noise * sigma_up
        prev_sample = prev_sample.to(model_output.dtype)
        self._step_index += 1
        if not return_dict:
            return (prev_sample, pred_original_sample)
        return {"prev_sample": prev_sample, "pred_original_sample": pred_original_sample}


class Denoise(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.unet = torch.nn.Linear(4, 4)
        self.scheduler = EulerAncestralDiscreteScheduler()

    def forward(self, latents, t):
        return self.scheduler.step(self.unet(latents), t, latents, return_dict=False)[0]


denoise = torch.compile(Denoise())


def make():
    torch.manual_seed(0)
    return Denoise(), [(torch.randn(1, 4), torch.tensor(666.0))]
