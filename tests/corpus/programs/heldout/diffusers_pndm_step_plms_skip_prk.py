"""diffusers PNDMScheduler with skip_prk_steps (Stable Diffusion config): PLMS-only steps with the `counter == 1` re-evaluation and Python-list `ets`, inside a compiled pipeline call.

Source: huggingface/diffusers@03dd2874fe1e3c9c56e7f21720b7086b4255fd0c:src/diffusers/schedulers/scheduling_pndm.py:90-330
Kept: __init__ (linear betas, alphas_cumprod, final_alpha_cumprod, running
values cur_model_output / counter / cur_sample / ets), set_timesteps (numpy
arange/repeat/tile/concatenate prk + plms timesteps, steps_offset from the
config), step dispatching on `self.counter < len(self.prk_timesteps)`,
step_prk (counter % 4 accumulation, prk_timesteps lookup), step_plms (the
len(self.ets) multistep formulas), _get_prev_sample (`prev_timestep >= 0`),
the SchedulerOutput return with return_dict, and the pipeline loop
`for t in scheduler.timesteps: unet -> scheduler.step(...).prev_sample`
in PNDMPipeline.__call__ (pipeline_pndm.py of the same era), compiled whole, with the Stable Diffusion scheduler config (scaled_linear,
skip_prk_steps=True, steps_offset=1).
Simplified: ConfigMixin/register_to_config become a plain config object;
no deprecated `offset` kwarg path; no progress bar and no numpy/PIL output
conversion; 50 train steps, 5 inference steps; the UNet is a 1x1 conv
taking the timestep through a scalar embedding and returns a plain tensor.
"""
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn


@dataclass
class SchedulerOutput:
    prev_sample: torch.Tensor


class SchedulerConfig:
    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)


class PNDMScheduler:
    def __init__(
        self,
        num_train_timesteps=1000,
        beta_start=0.0001,
        beta_end=0.02,
        beta_schedule="linear",
        trained_betas=None,
        skip_prk_steps=False,
        set_alpha_to_one=False,
        steps_offset=0,
    ):
        self.config = SchedulerConfig(
            num_train_timesteps=num_train_timesteps,
            beta_start=beta_start,
            beta_end=beta_end,
            beta_schedule=beta_schedule,
            trained_betas=trained_betas,
            skip_prk_steps=skip_prk_steps,
            set_alpha_to_one=set_alpha_to_one,
            steps_offset=steps_offset,
        )
        if trained_betas is not None:
            self.betas = torch.from_numpy(trained_betas)
        if beta_schedule == "linear":
            self.betas = torch.linspace(beta_start, beta_end, num_train_timesteps, dtype=torch.float32)
        elif beta_schedule == "scaled_linear":
            self.betas = torch.linspace(beta_start**0.5, beta_end**0.5, num_train_timesteps, dtype=torch.float32) ** 2
        else:
            raise NotImplementedError(f"{beta_schedule} does is not implemented for {self.__class__}")

        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)

        self.final_alpha_cumprod = torch.tensor(1.0) if set_alpha_to_one else self.alphas_cumprod[0]

        self.pndm_order = 4

        # running values
        self.cur_model_output = 0
        self.counter = 0
        self.cur_sample = None
        self.ets = []

        # setable values
        self.num_inference_steps = None
        self._timesteps = np.arange(0, num_train_timesteps)[::-1].copy()
        self.prk_timesteps = None
        self.plms_timesteps = None
        self.timesteps = None

    def set_timesteps(self, num_inference_steps):
        offset = self.config.steps_offset

        self.num_inference_steps = num_inference_steps
        step_ratio = self.config.num_train_timesteps // self.num_inference_steps
        self._timesteps = (np.arange(0, num_inference_steps) * step_ratio).round()
        self._timesteps += offset

        if self.config.skip_prk_steps:
            self.prk_timesteps = np.array([])
            self.plms_timesteps = np.concatenate([self._timesteps[:-1], self._timesteps[-2:-1], self._timesteps[-1:]])[
                ::-1
            ].copy()
        else:
            prk_timesteps = np.array(self._timesteps[-self.pndm_order :]).repeat(2) + np.tile(
                np.array([0, self.config.num_train_timesteps // num_inference_steps // 2]), self.pndm_order
            )
            self.prk_timesteps = (prk_timesteps[:-1].repeat(2)[1:-1])[::-1].copy()
            self.plms_timesteps = self._timesteps[:-3][::-1].copy()

        self.timesteps = np.concatenate([self.prk_timesteps, self.plms_timesteps]).astype(np.int64)

        self.ets = []
        self.counter = 0

    def step(self, model_output, timestep, sample, return_dict=True):
        if self.counter < len(self.prk_timesteps) and not self.config.skip_prk_steps:
            return self.step_prk(model_output=model_output, timestep=timestep, sample=sample, return_dict=return_dict)
        else:
            return self.step_plms(model_output=model_output, timestep=timestep, sample=sample, return_dict=return_dict)

    def step_prk(self, model_output, timestep, sample, return_dict=True):
        if self.num_inference_steps is None:
            raise ValueError(
                "Number of inference steps is 'None', you need to run 'set_timesteps' after creating the scheduler"
            )

        diff_to_prev = 0 if self.counter % 2 else self.config.num_train_timesteps // self.num_inference_steps // 2
        prev_timestep = timestep - diff_to_prev
        timestep = self.prk_timesteps[self.counter // 4 * 4]

        if self.counter % 4 == 0:
            self.cur_model_output += 1 / 6 * model_output
            self.ets.append(model_output)
            self.cur_sample = sample
        elif (self.counter - 1) % 4 == 0:
            self.cur_model_output += 1 / 3 * model_output
        elif (self.counter - 2) % 4 == 0:
            self.cur_model_output += 1 / 3 * model_output
        elif (self.counter - 3) % 4 == 0:
            model_output = self.cur_model_output + 1 / 6 * model_output
            self.cur_model_output = 0

        # cur_sample should not be `None`
        cur_sample = self.cur_sample if self.cur_sample is not None else sample

        prev_sample = self._get_prev_sample(cur_sample, timestep, prev_timestep, model_output)
        self.counter += 1

        if not return_dict:
            return (prev_sample,)

        return SchedulerOutput(prev_sample=prev_sample)

    def step_plms(self, model_output, timestep, sample, return_dict=True):
        if self.num_inference_steps is None:
            raise ValueError(
                "Number of inference steps is 'None', you need to run 'set_timesteps' after creating the scheduler"
            )

        if not self.config.skip_prk_steps and len(self.ets) < 3:
            raise ValueError(
                f"{self.__class__} can only be run AFTER scheduler has been run "
                "in 'prk' mode for at least 12 iterations "
            )

        prev_timestep = timestep - self.config.num_train_timesteps // self.num_inference_steps

        if self.counter != 1:
            self.ets.append(model_output)
        else:
            prev_timestep = timestep
            timestep = timestep + self.config.num_train_timesteps // self.num_inference_steps

        if len(self.ets) == 1 and self.counter == 0:
            model_output = model_output
            self.cur_sample = sample
        elif len(self.ets) == 1 and self.counter == 1:
            model_output = (model_output + self.ets[-1]) / 2
            sample = self.cur_sample
            self.cur_sample = None
        elif len(self.ets) == 2:
            model_output = (3 * self.ets[-1] - self.ets[-2]) / 2
        elif len(self.ets) == 3:
            model_output = (23 * self.ets[-1] - 16 * self.ets[-2] + 5 * self.ets[-3]) / 12
        else:
            model_output = (1 / 24) * (55 * self.ets[-1] - 59 * self.ets[-2] + 37 * self.ets[-3] - 9 * self.ets[-4])

        prev_sample = self._get_prev_sample(sample, timestep, prev_timestep, model_output)
        self.counter += 1

        if not return_dict:
            return (prev_sample,)

        return SchedulerOutput(prev_sample=prev_sample)

    def _get_prev_sample(self, sample, timestep, prev_timestep, model_output):
        alpha_prod_t = self.alphas_cumprod[timestep]
        alpha_prod_t_prev = self.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else self.final_alpha_cumprod
        beta_prod_t = 1 - alpha_prod_t
        beta_prod_t_prev = 1 - alpha_prod_t_prev

        sample_coeff = (alpha_prod_t_prev / alpha_prod_t) ** (0.5)

        model_output_denom_coeff = alpha_prod_t * beta_prod_t_prev ** (0.5) + (
            alpha_prod_t * beta_prod_t * alpha_prod_t_prev
        ) ** (0.5)

        prev_sample = (
            sample_coeff * sample - (alpha_prod_t_prev - alpha_prod_t) * model_output / model_output_denom_coeff
        )

        return prev_sample


class TinyUNet(nn.Module):
    def __init__(self, channels=3):
        super().__init__()
        self.in_channels = channels
        self.sample_size = 4
        self.conv = nn.Conv2d(channels, channels, 1)
        self.time_proj = nn.Linear(1, channels)

    def forward(self, sample, timestep):
        t = torch.as_tensor(timestep, dtype=sample.dtype).reshape(1, 1) / 50.0
        emb = self.time_proj(t)[:, :, None, None]
        return self.conv(sample) + emb


class PNDMPipeline:
    def __init__(self, unet, scheduler):
        self.unet = unet
        self.scheduler = scheduler

    @torch.no_grad()
    def __call__(self, batch_size=1, generator=None, num_inference_steps=50):
        image = torch.randn(
            (batch_size, self.unet.in_channels, self.unet.sample_size, self.unet.sample_size),
            generator=generator,
        )

        self.scheduler.set_timesteps(num_inference_steps)
        for t in self.scheduler.timesteps:
            model_output = self.unet(image, t)
            image = self.scheduler.step(model_output, t, image).prev_sample

        image = (image / 2 + 0.5).clamp(0, 1)
        return image


def build_pipeline():
    return PNDMPipeline(
        TinyUNet(3),
        PNDMScheduler(
            num_train_timesteps=50,
            beta_start=0.00085,
            beta_end=0.012,
            beta_schedule="scaled_linear",
            skip_prk_steps=True,
            set_alpha_to_one=False,
            steps_offset=1,
        ),
    )


pipe = build_pipeline()
pipe_call = torch.compile(pipe.__call__)


def make():
    torch.manual_seed(0)
    pipe = build_pipeline()
    return pipe.__call__, [(1, None, 5)]
