"""diffusers UnCLIPScheduler.step called with tensor timesteps from the pipeline loop: `prev_timestep >= 0` picks alphas_cumprod or `self.one`, `prev_timestep == t - 1` picks betas[t] or a recomputed beta, `if t > 0:` adds learned-range variance noise (`_get_variance`), output dataclass or tuple.

Source: huggingface/diffusers@58eb52c0803ea9af3abec60841c2a093bdf1f951:src/diffusers/schedulers/scheduling_unclip.py:UnCLIPSchedulerOutput,betas_for_alpha_bar,UnCLIPScheduler
Also: src/diffusers/pipelines/deprecated/unclip/pipeline_unclip.py:323-352 (how step receives `t` and `prev_timestep`).
Kept: betas_for_alpha_bar (cosine/laplace/exp), __init__ (squaredcos check,
one, timesteps), set_timesteps (numpy round/astype), _get_variance, step and
add_noise verbatim; randn_tensor; the output dataclass.
Simplified: ConfigMixin replaced by a small `config` namespace holding the
same registered values; num_train_timesteps 1000, 4 inference steps, 1x4
embeddings. The step is compiled as `torch.compile(scheduler.step)`.
"""
import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Literal

import numpy as np
import torch


@dataclass
class UnCLIPSchedulerOutput:
    prev_sample: torch.Tensor
    pred_original_sample: torch.Tensor | None = None


def randn_tensor(shape, generator=None, device=None, dtype=None, layout=None):
    layout = layout or torch.strided
    device = device or torch.device("cpu")
    return torch.randn(shape, generator=generator, device=device, dtype=dtype, layout=layout)


def betas_for_alpha_bar(
    num_diffusion_timesteps: int,
    max_beta: float = 0.999,
    alpha_transform_type: Literal["cosine", "exp", "laplace"] = "cosine",
) -> torch.Tensor:
    if alpha_transform_type == "cosine":

        def alpha_bar_fn(t):
            return math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2

    elif alpha_transform_type == "laplace":

        def alpha_bar_fn(t):
            lmb = -0.5 * math.copysign(1, 0.5 - t) * math.log(1 - 2 * math.fabs(0.5 - t) + 1e-6)
            snr = math.exp(lmb)
            return math.sqrt(snr / (1 + snr))

    elif alpha_transform_type == "exp":

        def alpha_bar_fn(t):
            return math.exp(t * -12.0)

    else:
        raise ValueError(f"Unsupported alpha_transform_type: {alpha_transform_type}")

    betas = []
    for i in range(num_diffusion_timesteps):
        t1 = i / num_diffusion_timesteps
        t2 = (i + 1) / num_diffusion_timesteps
        betas.append(min(1 - alpha_bar_fn(t2) / alpha_bar_fn(t1), max_beta))
    return torch.tensor(betas, dtype=torch.float32)


class UnCLIPScheduler:
    def __init__(
        self,
        num_train_timesteps: int = 1000,
        variance_type: Literal["fixed_small_log", "learned_range"] = "fixed_small_log",
        clip_sample: bool = True,
        clip_sample_range: float = 1.0,
        prediction_type: Literal["epsilon", "sample"] = "epsilon",
        beta_schedule: Literal["squaredcos_cap_v2"] = "squaredcos_cap_v2",
    ) -> None:
        self.config = SimpleNamespace(
            num_train_timesteps=num_train_timesteps, variance_type=variance_type, clip_sample=clip_sample,
            clip_sample_range=clip_sample_range, prediction_type=prediction_type, beta_schedule=beta_schedule,
        )
        if beta_schedule != "squaredcos_cap_v2":
            raise ValueError("UnCLIPScheduler only supports `beta_schedule`: 'squaredcos_cap_v2'")

        self.betas = betas_for_alpha_bar(num_train_timesteps)

        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)
        self.one = torch.tensor(1.0)

        # standard deviation of the initial noise distribution
        self.init_noise_sigma = 1.0

        # setable values
        self.num_inference_steps = None
        self.timesteps = torch.from_numpy(np.arange(0, num_train_timesteps)[::-1].copy())

        self.variance_type = variance_type

    def scale_model_input(self, sample: torch.Tensor, timestep: int | None = None) -> torch.Tensor:
        return sample

    def set_timesteps(self, num_inference_steps: int, device: str | torch.device | None = None) -> None:
        self.num_inference_steps = num_inference_steps
        step_ratio = (self.config.num_train_timesteps - 1) / (self.num_inference_steps - 1)
        timesteps = (np.arange(0, num_inference_steps) * step_ratio).round()[::-1].copy().astype(np.int64)
        self.timesteps = torch.from_numpy(timesteps).to(device)

    def _get_variance(
        self,
        t: int,
        prev_timestep: int | None = None,
        predicted_variance: torch.Tensor | None = None,
        variance_type: Literal["fixed_small_log", "learned_range"] | None = None,
    ) -> torch.Tensor:
        if prev_timestep is None:
            prev_timestep = t - 1

        alpha_prod_t = self.alphas_cumprod[t]
        alpha_prod_t_prev = self.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else self.one
        beta_prod_t = 1 - alpha_prod_t
        beta_prod_t_prev = 1 - alpha_prod_t_prev

        if prev_timestep == t - 1:
            beta = self.betas[t]
        else:
            beta = 1 - alpha_prod_t / alpha_prod_t_prev

        variance = beta_prod_t_prev / beta_prod_t * beta

        if variance_type is None:
            variance_type = self.config.variance_type

        # hacks - were probably added for training stability
        if variance_type == "fixed_small_log":
            variance = torch.log(torch.clamp(variance, min=1e-20))
            variance = torch.exp(0.5 * variance)
        elif variance_type == "learned_range":
            # NOTE difference with DDPM scheduler
            min_log = variance.log()
            max_log = beta.log()

            frac = (predicted_variance + 1) / 2
            variance = frac * max_log + (1 - frac) * min_log

        return variance

    def step(
        self,
        model_output: torch.Tensor,
        timestep: int,
        sample: torch.Tensor,
        prev_timestep: int | None = None,
        generator: torch.Generator | None = None,
        return_dict: bool = True,
    ) -> UnCLIPSchedulerOutput | tuple:
        t = timestep

        if model_output.shape[1] == sample.shape[1] * 2 and self.variance_type == "learned_range":
            model_output, predicted_variance = torch.split(model_output, sample.shape[1], dim=1)
        else:
            predicted_variance = None

        # 1. compute alphas, betas
        if prev_timestep is None:
            prev_timestep = t - 1

        alpha_prod_t = self.alphas_cumprod[t]
        alpha_prod_t_prev = self.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else self.one
        beta_prod_t = 1 - alpha_prod_t
        beta_prod_t_prev = 1 - alpha_prod_t_prev

        if prev_timestep == t - 1:
            beta = self.betas[t]
            alpha = self.alphas[t]
        else:
            beta = 1 - alpha_prod_t / alpha_prod_t_prev
            alpha = 1 - beta

        # 2. compute predicted original sample from predicted noise also called
        # "predicted x_0" of formula (15) from https://huggingface.co/papers/2006.11239
        if self.config.prediction_type == "epsilon":
            pred_original_sample = (sample - beta_prod_t ** (0.5) * model_output) / alpha_prod_t ** (0.5)
        elif self.config.prediction_type == "sample":
            pred_original_sample = model_output
        else:
            raise ValueError(
                f"prediction_type given as {self.config.prediction_type} must be one of `epsilon` or `sample`"
                " for the UnCLIPScheduler."
            )

        # 3. Clip "predicted x_0"
        if self.config.clip_sample:
            pred_original_sample = torch.clamp(
                pred_original_sample, -self.config.clip_sample_range, self.config.clip_sample_range
            )

        # 4. Compute coefficients for pred_original_sample x_0 and current sample x_t
        pred_original_sample_coeff = (alpha_prod_t_prev ** (0.5) * beta) / beta_prod_t
        current_sample_coeff = alpha ** (0.5) * beta_prod_t_prev / beta_prod_t

        # 5. Compute predicted previous sample µ_t
        pred_prev_sample = pred_original_sample_coeff * pred_original_sample + current_sample_coeff * sample

        # 6. Add noise
        variance = 0
        if t > 0:
            variance_noise = randn_tensor(
                model_output.shape, dtype=model_output.dtype, generator=generator, device=model_output.device
            )

            variance = self._get_variance(
                t,
                predicted_variance=predicted_variance,
                prev_timestep=prev_timestep,
            )

            if self.variance_type == "fixed_small_log":
                variance = variance
            elif self.variance_type == "learned_range":
                variance = (0.5 * variance).exp()
            else:
                raise ValueError(
                    f"variance_type given as {self.variance_type} must be one of `fixed_small_log` or `learned_range`"
                    " for the UnCLIPScheduler."
                )

            variance = variance * variance_noise

        pred_prev_sample = pred_prev_sample + variance

        if not return_dict:
            return (
                pred_prev_sample,
                pred_original_sample,
            )

        return UnCLIPSchedulerOutput(prev_sample=pred_prev_sample, pred_original_sample=pred_original_sample)

    def add_noise(
        self,
        original_samples: torch.Tensor,
        noise: torch.Tensor,
        timesteps: torch.IntTensor,
    ) -> torch.Tensor:
        self.alphas_cumprod = self.alphas_cumprod.to(device=original_samples.device)
        alphas_cumprod = self.alphas_cumprod.to(dtype=original_samples.dtype)
        timesteps = timesteps.to(original_samples.device)

        sqrt_alpha_prod = alphas_cumprod[timesteps] ** 0.5
        sqrt_alpha_prod = sqrt_alpha_prod.flatten()
        while len(sqrt_alpha_prod.shape) < len(original_samples.shape):
            sqrt_alpha_prod = sqrt_alpha_prod.unsqueeze(-1)

        sqrt_one_minus_alpha_prod = (1 - alphas_cumprod[timesteps]) ** 0.5
        sqrt_one_minus_alpha_prod = sqrt_one_minus_alpha_prod.flatten()
        while len(sqrt_one_minus_alpha_prod.shape) < len(original_samples.shape):
            sqrt_one_minus_alpha_prod = sqrt_one_minus_alpha_prod.unsqueeze(-1)

        noisy_samples = sqrt_alpha_prod * original_samples + sqrt_one_minus_alpha_prod * noise
        return noisy_samples


def build_decoder_scheduler():
    scheduler = UnCLIPScheduler(variance_type="learned_range")
    scheduler.set_timesteps(4)
    scheduler.step = torch.compile(scheduler.step)
    return scheduler


def make():
    torch.manual_seed(0)
    scheduler = UnCLIPScheduler(variance_type="learned_range")
    scheduler.set_timesteps(4)
    timesteps = scheduler.timesteps  # [999, 666, 333, 0]
    sample = torch.randn(1, 4)
    model_output = torch.randn(1, 8)
    return scheduler.step, [
        (model_output, timesteps[0], sample, timesteps[1]),
        (model_output, timesteps[2], sample, timesteps[3], None, False),
        (model_output, timesteps[3], sample, None),
    ]
