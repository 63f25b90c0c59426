"""diffusers DDPMScheduler.step with a tensor timestep: previous_timestep's nonzero, `prev_t >= 0` and `t > 0` on tensors.

Source: huggingface/diffusers@58eb52c080:src/diffusers/schedulers/scheduling_ddpm.py:355-560,648-668
Kept: step's split of a learned variance, alphas from alphas_cumprod with the
`if prev_t >= 0 else self.one` ifexp, the prediction_type switch with its
ValueError, clip_sample, the coefficient math, `if t > 0:` noise with the
variance_type switch, _get_variance and previous_timestep (custom/inference
timesteps: nonzero(as_tuple=True)[0][0], `index == len - 1`), tuple return.
Simplified: 10 training steps, 4 inference timesteps; randn instead of
randn_tensor; the "UNet" is a linear layer on the last dim.
"""
import torch
from torch import nn


class SchedulerConfig:
    num_train_timesteps = 10
    variance_type = "fixed_small"
    prediction_type = "epsilon"
    thresholding = False
    clip_sample = True
    clip_sample_range = 1.0


class DDPMScheduler:
    def __init__(self, config):
        self.config = config
        self.betas = torch.linspace(0.0001, 0.02, config.num_train_timesteps)
        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = torch.cumprod(self.alphas, dim=0)
        self.one = torch.tensor(1.0)
        self.custom_timesteps = False
        self.num_inference_steps = None
        self.variance_type = config.variance_type
        self.timesteps = torch.arange(0, config.num_train_timesteps).flip(0)

    def set_timesteps(self, num_inference_steps):
        self.num_inference_steps = num_inference_steps
        step_ratio = self.config.num_train_timesteps // num_inference_steps
        self.timesteps = (torch.arange(0, num_inference_steps) * step_ratio).flip(0)

    def _get_variance(self, t, predicted_variance=None, variance_type=None):
        prev_t = self.previous_timestep(t)
        alpha_prod_t = self.alphas_cumprod[t]
        alpha_prod_t_prev = self.alphas_cumprod[prev_t] if prev_t >= 0 else self.one
        current_beta_t = 1 - alpha_prod_t / alpha_prod_t_prev
        variance = (1 - alpha_prod_t_prev) / (1 - alpha_prod_t) * current_beta_t
        variance = torch.clamp(variance, min=1e-20)
        if variance_type is None:
            variance_type = self.config.variance_type
        if variance_type == "fixed_small":
            variance = variance
        elif variance_type == "fixed_small_log":
            variance = torch.log(variance)
            variance = torch.exp(0.5 * variance)
        elif variance_type == "fixed_large":
            variance = current_beta_t
        elif variance_type == "learned":
            return predicted_variance
        elif variance_type == "learned_range":
            min_log = torch.log(variance)
            max_log = torch.log(current_beta_t)
            frac = (predicted_variance + 1) / 2
            variance = frac * max_log + (1 - frac) * min_log
        return variance

    def step(self, model_output, timestep, sample, generator=None, return_dict=True):
        t = timestep
        prev_t = self.previous_timestep(t)
        if model_output.shape[1] == sample.shape[1] * 2 and self.variance_type in [
            "learned",
            "learned_range",
        ]:
            model_output, predicted_variance = torch.split(model_output, sample.shape[1], dim=1)
        else:
            predicted_variance = None

        alpha_prod_t = self.alphas_cumprod[t]
        alpha_prod_t_prev = self.alphas_cumprod[prev_t] if prev_t >= 0 else self.one
        beta_prod_t = 1 - alpha_prod_t
        beta_prod_t_prev = 1 - alpha_prod_t_prev
        current_alpha_t = alpha_prod_t / alpha_prod_t_prev
        current_beta_t = 1 - current_alpha_t

        if self.config.prediction_type == "epsilon":
            pred_original_sample = (sample - beta_prod_t ** (0.5) * model_output) / alpha_prod_t ** (0.5)
        elif self.config.prediction_type == "sample":
            pred_original_sample = model_output
        elif self.config.prediction_type == "v_prediction":
            pred_original_sample = (alpha_prod_t**0.5) * sample - (beta_prod_t**0.5) * model_output
        else:
            raise ValueError(
                f"prediction_type given as {self.config.prediction_type} must be one of `epsilon`, `sample` or"
                " `v_prediction`  for the DDPMScheduler."
            )

        if self.config.thresholding:
            pred_original_sample = pred_original_sample.clamp(-1.0, 1.0)
        elif self.config.clip_sample:
            pred_original_sample = pred_original_sample.clamp(
                -self.config.clip_sample_range, self.config.clip_sample_range
            )

        pred_original_sample_coeff = (alpha_prod_t_prev ** (0.5) * current_beta_t) / beta_prod_t
        current_sample_coeff = current_alpha_t ** (0.5) * beta_prod_t_prev / beta_prod_t
        pred_prev_sample = pred_original_sample_coeff * pred_original_sample + current_sample_coeff * sample

        variance = 0
        if t > 0:
            variance_noise = torch.randn(
                model_output.shape, generator=generator, device=model_output.device, dtype=model_output.dtype
            )
            if self.variance_type == "fixed_small_log":
                variance = self._get_variance(t, predicted_variance=predicted_variance) * variance_noise
            elif self.variance_type == "learned_range":
                variance = self._get_variance(t, predicted_variance=predicted_variance)
                variance = torch.exp(0.5 * variance) * variance_noise
            else:
                variance = (self._get_variance(t, predicted_variance=predicted_variance) ** 0.5) * variance_noise

        pred_prev_sample = pred_prev_sample + variance
        if not return_dict:
            return (pred_prev_sample, pred_original_sample)
        return {"prev_sample": pred_prev_sample, "pred_original_sample": pred_original_sample}

    def previous_timestep(self, timestep):
        if self.custom_timesteps or self.num_inference_steps:
            index = (self.timesteps == timestep).nonzero(as_tuple=True)[0][0]
            if index == self.timesteps.shape[0] - 1:
                prev_t = torch.tensor(-1)
            else:
                prev_t = self.timesteps[index + 1]
        else:
            prev_t = timestep - 1
        return prev_t


class DenoiseStep(nn.Module):
    def __init__(self):
        super().__init__()
        self.unet = nn.Linear(4, 4)
        self.scheduler = DDPMScheduler(SchedulerConfig())
        self.scheduler.set_timesteps(4)

    def forward(self, latents, t):
        noise_pred = self.unet(latents)
        return self.scheduler.step(noise_pred, t, latents, return_dict=False)[0]


def main():
    step = torch.compile(DenoiseStep(), mode="reduce-overhead")
    latents = torch.randn(1, 2, 4)
    for t in step.scheduler.timesteps:
        latents = step(latents, t)
    return latents


def make():
    torch.manual_seed(0)
    latents = torch.randn(1, 2, 4)
    return DenoiseStep(), [(latents, torch.tensor(4)), (latents, torch.tensor(0))]
