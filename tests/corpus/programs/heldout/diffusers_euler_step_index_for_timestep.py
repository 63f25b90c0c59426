"""diffusers EulerDiscreteScheduler in a compiled denoising step: index_for_timestep's nonzero/len/.item() and `s_tmin <= sigma <= s_tmax`.

Source: huggingface/diffusers@58eb52c080:src/diffusers/schedulers/scheduling_euler_discrete.py:326-348,640-800
Kept: scale_model_input, _init_step_index / index_for_timestep (nonzero,
`pos = 1 if len(indices) > 1 else 0`, `indices[pos].item()`), step with its
integer-timestep ValueError, the is_scale_input_called warning, the churn
`gamma` conditional on a sigma tensor, the prediction_type switch,
`_step_index += 1` and the return_dict tuple.
Simplified: 5 sigmas, a linear "UNet", prediction_type epsilon, no generator.
"""
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class Config:
    prediction_type = "epsilon"


class EulerDiscreteScheduler:
    def __init__(self, num_inference_steps=4):
        self.config = Config()
        self.timesteps = torch.linspace(999, 0, num_inference_steps)
        sigmas = torch.linspace(14.6, 0.03, num_inference_steps)
        self.sigmas = torch.cat([sigmas, torch.zeros(1)])
        self._step_index = None
        self._begin_index = None
        self.is_scale_input_called = False

    @property
    def step_index(self):
        return self._step_index

    @property
    def begin_index(self):
        return self._begin_index

    def index_for_timestep(self, timestep, schedule_timesteps=None):
        if schedule_timesteps is None:
            schedule_timesteps = self.timesteps
        indices = (schedule_timesteps == timestep).nonzero()
        pos = 1 if len(indices) > 1 else 0
        return indices[pos].item()

    def _init_step_index(self, timestep):
        if self.begin_index is None:
            if isinstance(timestep, torch.Tensor):
                timestep = timestep.to(self.timesteps.device)
            self._step_index = self.index_for_timestep(timestep)
        else:
            self._step_index = self._begin_index

    def scale_model_input(self, sample, timestep):
        if self.step_index is None:
            self._init_step_index(timestep)
        sigma = self.sigmas[self.step_index]
        sample = sample / ((sigma**2 + 1) ** 0.5)
        self.is_scale_input_called = True
        return sample

    def step(self, model_output, timestep, sample, s_churn=0.0, s_tmin=0.0, s_tmax=float("inf"), s_noise=1.0, return_dict=True):
        if isinstance(timestep, (int, torch.IntTensor, torch.LongTensor)):
            raise ValueError("Passing integer indices (e.g. from `enumerate(timesteps)`) as timesteps is not supported.")
        if not self.is_scale_input_called:
            logger.warning("The `scale_model_input` function should be called before `step` to ensure correct denoising.")
        if self.step_index is None:
            self._init_step_index(timestep)
        sample = sample.to(torch.float32)
        sigma = self.sigmas[self.step_index]
        gamma = min(s_churn / (len(self.sigmas) - 1), 2**0.5 - 1) if s_tmin <= sigma <= s_tmax else 0.0
        sigma_hat = sigma * (gamma + 1)
        if gamma > 0:
            noise = torch.randn(model_output.shape, dtype=model_output.dtype, device=model_output.device)
            eps = noise * s_noise
            sample = sample + eps * (sigma_hat**2 - sigma**2) ** 0.5
        if self.config.prediction_type == "original_sample" or self.config.prediction_type == "sample":
            pred_original_sample = model_output
        elif self.config.prediction_type == "epsilon":
            pred_original_sample = sample - sigma_hat * model_output
        else:
            raise ValueError(f"prediction_type given as {self.config.prediction_type} must be one of `epsilon`, or `v_prediction`")
        derivative = (sample - pred_original_sample) / sigma_hat
        dt = self.sigmas[self.step_index + 1] - sigma_hat
        prev_sample = sample + derivative * dt
        prev_sample = prev_sample.to(model_output.dtype)
        self._step_index += 1
        if not return_dict:
            return (prev_sample, pred_original_sample)
        return {"prev_sample": prev_sample, "pred_original_sample": pred_original_sample}


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.unet = nn.Linear(4, 4)
        self.scheduler = EulerDiscreteScheduler()

    def forward(self, latents, t):
        latent_model_input = self.scheduler.scale_model_input(latents, t)
        noise_pred = self.unet(latent_model_input)
        return self.scheduler.step(noise_pred, t, latents, return_dict=False)[0]


denoiser = torch.compile(Denoiser(), mode="max-autotune-no-cudagraphs")


def make():
    torch.manual_seed(0)
    model = Denoiser()
    return model, [(torch.randn(1, 4), model.scheduler.timesteps[0])]
