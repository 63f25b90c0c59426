"""diffusers ScoreSdeVeScheduler in the score-SDE-VE pipeline's predictor-corrector loop: norms for the corrector step size, `.long()` sigma indices, generator noise, numpy output.

Source: huggingface/diffusers@58eb52c080:src/diffusers/schedulers/scheduling_sde_ve.py:29-44,45-86,105-175,177-298
Also: src/diffusers/pipelines/deprecated/score_sde_ve/pipeline_score_sde_ve.py (__call__ body)
Kept: __init__ (init_noise_sigma, set_sigmas at construction), set_timesteps
(linspace), set_sigmas (`if self.timesteps is None`, discrete_sigmas,
the per-t list comprehension into torch.tensor), get_adjacent_sigma
(torch.where), step_pred (timesteps None guard, `(timestep *
(len(self.timesteps) - 1)).long()`, the while-unsqueeze, noise with the
generator, tuple/output return), step_correct (grad/noise norms, step size,
while-unsqueeze); the pipeline's @torch.no_grad() __call__ loop (init noise, set_timesteps/set_sigmas,
sigma_t, `for _ in range(config.correct_steps)` corrector, predictor,
`sample_mean.clamp(0, 1)`, `.cpu().permute(0, 2, 3, 1).numpy()`).
Simplified: ConfigMixin becomes a plain config class; diffusers'
randn_tensor helper becomes torch.randn with the generator; the UNet is a
tiny conv net returning an object with `.sample`; progress_bar and the PIL
branch dropped; 3 inference steps.
"""
import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class SdeVeOutput:
    prev_sample: torch.Tensor
    prev_sample_mean: torch.Tensor


@dataclass
class SchedulerOutput:
    prev_sample: torch.Tensor


class SdeVeConfig:
    num_train_timesteps = 2000
    snr = 0.15
    sigma_min = 0.01
    sigma_max = 1348.0
    sampling_eps = 1e-5
    correct_steps = 1


class ScoreSdeVeScheduler:
    order = 1

    def __init__(self, config=None):
        self.config = config or SdeVeConfig()
        # standard deviation of the initial noise distribution
        self.init_noise_sigma = self.config.sigma_max

        # setable values
        self.timesteps = None

        self.set_sigmas(
            self.config.num_train_timesteps, self.config.sigma_min, self.config.sigma_max, self.config.sampling_eps
        )

    def scale_model_input(self, sample, timestep=None):
        return sample

    def set_timesteps(self, num_inference_steps, sampling_eps=None, device=None):
        sampling_eps = sampling_eps if sampling_eps is not None else self.config.sampling_eps

        self.timesteps = torch.linspace(1, sampling_eps, num_inference_steps, device=device)

    def set_sigmas(self, num_inference_steps, sigma_min=None, sigma_max=None, sampling_eps=None):
        sigma_min = sigma_min if sigma_min is not None else self.config.sigma_min
        sigma_max = sigma_max if sigma_max is not None else self.config.sigma_max
        sampling_eps = sampling_eps if sampling_eps is not None else self.config.sampling_eps
        if self.timesteps is None:
            self.set_timesteps(num_inference_steps, sampling_eps)

        self.sigmas = sigma_min * (sigma_max / sigma_min) ** (self.timesteps / sampling_eps)
        self.discrete_sigmas = torch.exp(torch.linspace(math.log(sigma_min), math.log(sigma_max), num_inference_steps))
        self.sigmas = torch.tensor([sigma_min * (sigma_max / sigma_min) ** t for t in self.timesteps])

    def get_adjacent_sigma(self, timesteps, t):
        return torch.where(
            timesteps == 0,
            torch.zeros_like(t.to(timesteps.device)),
            self.discrete_sigmas[timesteps - 1].to(timesteps.device),
        )

    def step_pred(self, model_output, timestep, sample, generator=None, return_dict=True):
        if self.timesteps is None:
            raise ValueError(
                "`self.timesteps` is not set, you need to run 'set_timesteps' after creating the scheduler"
            )

        timestep = timestep * torch.ones(
            sample.shape[0], device=sample.device
        )  # torch.repeat_interleave(timestep, sample.shape[0])
        timesteps = (timestep * (len(self.timesteps) - 1)).long()

        # mps requires indices to be in the same device, so we use cpu as is the default with cuda
        timesteps = timesteps.to(self.discrete_sigmas.device)

        sigma = self.discrete_sigmas[timesteps].to(sample.device)
        adjacent_sigma = self.get_adjacent_sigma(timesteps, timestep).to(sample.device)
        drift = torch.zeros_like(sample)
        diffusion = (sigma**2 - adjacent_sigma**2) ** 0.5

        # equation 6 in the paper: the model_output modeled by the network is grad_x log pt(x)
        # also equation 47 shows the analog from SDE models to ancestral sampling methods
        diffusion = diffusion.flatten()
        while len(diffusion.shape) < len(sample.shape):
            diffusion = diffusion.unsqueeze(-1)
        drift = drift - diffusion**2 * model_output

        #  equation 6: sample noise for the diffusion term of
        noise = torch.randn(sample.shape, layout=sample.layout, generator=generator, device=sample.device, dtype=sample.dtype)
        prev_sample_mean = sample - drift  # subtract because `dt` is a small negative timestep
        # TODO is the variable diffusion the correct scaling term for the noise?
        prev_sample = prev_sample_mean + diffusion * noise  # add impact of diffusion field g

        if not return_dict:
            return (prev_sample, prev_sample_mean)

        return SdeVeOutput(prev_sample=prev_sample, prev_sample_mean=prev_sample_mean)

    def step_correct(self, model_output, sample, generator=None, return_dict=True):
        if self.timesteps is None:
            raise ValueError(
                "`self.timesteps` is not set, you need to run 'set_timesteps' after creating the scheduler"
            )

        # For small batch sizes, the paper "suggest replacing norm(z) with sqrt(d), where d is the dim. of z"
        # sample noise for correction
        noise = torch.randn(sample.shape, layout=sample.layout, generator=generator).to(sample.device)

        # compute step size from the model_output, the noise, and the snr
        grad_norm = torch.norm(model_output.reshape(model_output.shape[0], -1), dim=-1).mean()
        noise_norm = torch.norm(noise.reshape(noise.shape[0], -1), dim=-1).mean()
        step_size = (self.config.snr * noise_norm / grad_norm) ** 2 * 2
        step_size = step_size * torch.ones(sample.shape[0]).to(sample.device)
        # self.repeat_scalar(step_size, sample.shape[0])

        # compute corrected sample: model_output term and noise term
        step_size = step_size.flatten()
        while len(step_size.shape) < len(sample.shape):
            step_size = step_size.unsqueeze(-1)
        prev_sample_mean = sample + step_size * model_output
        prev_sample = prev_sample_mean + ((step_size * 2) ** 0.5) * noise

        if not return_dict:
            return (prev_sample,)

        return SchedulerOutput(prev_sample=prev_sample)


@dataclass
class UNet2DOutput:
    sample: torch.Tensor


class TinyNCSNUNet(nn.Module):
    class config:
        sample_size = 8

    def __init__(self):
        super().__init__()
        self.conv_in = nn.Conv2d(3, 8, 3, padding=1)
        self.sigma_proj = nn.Linear(1, 8)
        self.conv_out = nn.Conv2d(8, 3, 3, padding=1)

    def forward(self, sample, sigma):
        emb = self.sigma_proj(torch.log(sigma)[:, None])
        h = torch.nn.functional.silu(self.conv_in(sample) + emb[:, :, None, None])
        return UNet2DOutput(sample=self.conv_out(h) / sigma[:, None, None, None])


@torch.no_grad()
def score_sde_ve_generate(unet, scheduler, batch_size=1, num_inference_steps=3, generator=None, output_type="np"):
    img_size = unet.config.sample_size
    shape = (batch_size, 3, img_size, img_size)

    model = unet

    sample = torch.randn(shape, generator=generator) * scheduler.init_noise_sigma
    sample = sample.to("cpu")

    scheduler.set_timesteps(num_inference_steps)
    scheduler.set_sigmas(num_inference_steps)

    for i, t in enumerate(scheduler.timesteps):
        sigma_t = scheduler.sigmas[i] * torch.ones(shape[0], device="cpu")

        # correction step
        for _ in range(scheduler.config.correct_steps):
            model_output = unet(sample, sigma_t).sample
            sample = scheduler.step_correct(model_output, sample, generator=generator).prev_sample

        # prediction step
        model_output = model(sample, sigma_t).sample
        output = scheduler.step_pred(model_output, t, sample, generator=generator)

        sample, sample_mean = output.prev_sample, output.prev_sample_mean

    sample = sample_mean.clamp(0, 1)
    sample = sample.cpu().permute(0, 2, 3, 1).numpy()
    return (sample,)


generate = torch.compile(score_sde_ve_generate)


def make():
    torch.manual_seed(0)
    unet = TinyNCSNUNet()
    return score_sde_ve_generate, [
        (unet, ScoreSdeVeScheduler(), 2),
        (unet, ScoreSdeVeScheduler(), 1, 3, torch.Generator().manual_seed(0)),
    ]
