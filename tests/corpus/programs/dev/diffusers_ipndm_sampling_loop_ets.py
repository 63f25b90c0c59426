"""diffusers IPNDMScheduler sampling loop: step-index .item(), the ets history list and its len() order switch, max(alpha, 1e-8) on a 0-d tensor.

Source: huggingface/diffusers@00c951229da76fa04644cb5c7e20bc8d0a2562ff:src/diffusers/schedulers/scheduling_ipndm.py:25-193
Kept: __init__ (set_timesteps, pndm_order, ets list), set_timesteps (sin^2
betas or trained_betas, alphas, atan2 timesteps, ets/_step_index reset),
_init_step_index (nonzero candidates, len() > 1, .item()), step() with the
num_inference_steps ValueError, ets append and the 1/2/3/4+ history
branches, _get_prev_sample with `max(alpha, 1e-8)`, `_step_index += 1`,
return_dict tuple/SchedulerOutput; scale_model_input.
Simplified: register_to_config becomes a plain config object; the model is
a 1x1 conv; the loop is the usual pipeline loop with 5 inference steps.
"""
import math
from dataclasses import dataclass
from typing import List, Optional, Tuple, Union

import numpy as np
import torch


@dataclass
class SchedulerOutput:
    prev_sample: torch.FloatTensor


class SchedulerConfig:
    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)


class IPNDMScheduler:
    order = 1

    def __init__(
        self, num_train_timesteps: int = 1000, trained_betas: Optional[Union[np.ndarray, List[float]]] = None
    ):
        self.config = SchedulerConfig(num_train_timesteps=num_train_timesteps, trained_betas=trained_betas)
        # set `betas`, `alphas`, `timesteps`
        self.set_timesteps(num_train_timesteps)

        # standard deviation of the initial noise distribution
        self.init_noise_sigma = 1.0

        # For now we only support F-PNDM, i.e. the runge-kutta method
        # mainly at formula (9), (12), (13) and the Algorithm 2.
        self.pndm_order = 4

        # running values
        self.ets = []
        self._step_index = None

    @property
    def step_index(self):
        return self._step_index

    def set_timesteps(self, num_inference_steps: int, device: Union[str, torch.device] = None):
        self.num_inference_steps = num_inference_steps
        steps = torch.linspace(1, 0, num_inference_steps + 1)[:-1]
        steps = torch.cat([steps, torch.tensor([0.0])])

        if self.config.trained_betas is not None:
            self.betas = torch.tensor(self.config.trained_betas, dtype=torch.float32)
        else:
            self.betas = torch.sin(steps * math.pi / 2) ** 2

        self.alphas = (1.0 - self.betas**2) ** 0.5

        timesteps = (torch.atan2(self.betas, self.alphas) / math.pi * 2)[:-1]
        self.timesteps = timesteps.to(device)

        self.ets = []
        self._step_index = None

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

    def step(
        self,
        model_output: torch.FloatTensor,
        timestep: int,
        sample: torch.FloatTensor,
        return_dict: bool = True,
    ) -> Union[SchedulerOutput, Tuple]:
        if self.num_inference_steps is None:
            raise ValueError(
                "Number of inference steps is 'None', you need to run 'set_timesteps' after creating the scheduler"
            )
        if self.step_index is None:
            self._init_step_index(timestep)

        timestep_index = self.step_index
        prev_timestep_index = self.step_index + 1

        ets = sample * self.betas[timestep_index] + model_output * self.alphas[timestep_index]
        self.ets.append(ets)

        if len(self.ets) == 1:
            ets = self.ets[-1]
        elif len(self.ets) == 2:
            ets = (3 * self.ets[-1] - self.ets[-2]) / 2
        elif len(self.ets) == 3:
            ets = (23 * self.ets[-1] - 16 * self.ets[-2] + 5 * self.ets[-3]) / 12
        else:
            ets = (1 / 24) * (55 * self.ets[-1] - 59 * self.ets[-2] + 37 * self.ets[-3] - 9 * self.ets[-4])

        prev_sample = self._get_prev_sample(sample, timestep_index, prev_timestep_index, ets)

        # upon completion increase step index by one
        self._step_index += 1

        if not return_dict:
            return (prev_sample,)

        return SchedulerOutput(prev_sample=prev_sample)

    def scale_model_input(self, sample: torch.FloatTensor, *args, **kwargs) -> torch.FloatTensor:
        return sample

    def _get_prev_sample(self, sample, timestep_index, prev_timestep_index, ets):
        alpha = self.alphas[timestep_index]
        sigma = self.betas[timestep_index]

        next_alpha = self.alphas[prev_timestep_index]
        next_sigma = self.betas[prev_timestep_index]

        pred = (sample - sigma * ets) / max(alpha, 1e-8)
        prev_sample = next_alpha * pred + ets * next_sigma

        return prev_sample

    def __len__(self):
        return self.config.num_train_timesteps


class IPNDMPipeline(torch.nn.Module):
    def __init__(self, num_inference_steps=5):
        super().__init__()
        self.unet = torch.nn.Conv2d(3, 3, 1)
        self.scheduler = IPNDMScheduler(num_train_timesteps=50)
        self.num_inference_steps = num_inference_steps

    def forward(self, image):
        self.scheduler.set_timesteps(self.num_inference_steps)
        for t in self.scheduler.timesteps:
            model_input = self.scheduler.scale_model_input(image, t)
            model_output = self.unet(model_input)
            image = self.scheduler.step(model_output, t, image).prev_sample
        image = (image / 2 + 0.5).clamp(0, 1)
        return image


def generate():
    pipe = IPNDMPipeline()
    pipe = torch.compile(pipe, mode="reduce-overhead")
    return pipe


def make():
    torch.manual_seed(0)
    return IPNDMPipeline(), [(torch.randn(1, 3, 4, 4),), (torch.randn(2, 3, 5, 5),)]
