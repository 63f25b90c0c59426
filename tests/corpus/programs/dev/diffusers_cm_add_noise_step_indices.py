"""diffusers CMStochasticIterativeScheduler.add_noise in a compiled consistency-training step: a list comprehension of `(schedule_timesteps == t).nonzero().item()` per sampled timestep, sigma gather, `while len(sigma.shape) < ...` unsqueeze loop.

Source: huggingface/diffusers@90281cb924338f3edde83e114a2735df600eb59b:src/diffusers/schedulers/scheduling_consistency_models.py:29-60,381-404
Kept: the scheduler's __init__ (numpy Karras ramp, sigma_to_t,
torch.from_numpy sigmas/timesteps), _convert_to_karras, get_scalings_for_boundary_condition,
and add_noise exactly (sigmas .to(device, dtype), the mps/float branch,
the per-timestep nonzero().item() list, sigmas[step_indices].flatten(), the
while-unsqueeze loop); the training-step shape of a consistency-training
script (sample schedule indices, take timesteps and sigmas at them,
add_noise, scale the input, model, boundary-condition scalings, MSE).
Simplified: ConfigMixin becomes a config object; no set_timesteps/step
(inference parts); the model is a tiny conv; 40 train timesteps, batch 2.
"""
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


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

    def sigma_to_t(self, sigmas):
        if not isinstance(sigmas, np.ndarray):
            sigmas = np.array(sigmas, dtype=np.float64)

        timesteps = 1000 * 0.25 * np.log(sigmas + 1e-44)

        return timesteps

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

    # Copied from diffusers.schedulers.scheduling_euler_discrete.EulerDiscreteScheduler.add_noise
    def add_noise(
        self,
        original_samples: torch.FloatTensor,
        noise: torch.FloatTensor,
        timesteps: torch.FloatTensor,
    ) -> torch.FloatTensor:
        # Make sure sigmas and timesteps have the same device and dtype as original_samples
        sigmas = self.sigmas.to(device=original_samples.device, dtype=original_samples.dtype)
        if original_samples.device.type == "mps" and torch.is_floating_point(timesteps):
            # mps does not support float64
            schedule_timesteps = self.timesteps.to(original_samples.device, dtype=torch.float32)
            timesteps = timesteps.to(original_samples.device, dtype=torch.float32)
        else:
            schedule_timesteps = self.timesteps.to(original_samples.device)
            timesteps = timesteps.to(original_samples.device)

        step_indices = [(schedule_timesteps == t).nonzero().item() for t in timesteps]

        sigma = sigmas[step_indices].flatten()
        while len(sigma.shape) < len(original_samples.shape):
            sigma = sigma.unsqueeze(-1)

        noisy_samples = original_samples + noise * sigma
        return noisy_samples

    def __len__(self):
        return self.config.num_train_timesteps


class TinyUNet(nn.Module):
    def __init__(self, channels=3):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.time_proj = nn.Linear(1, channels)

    def forward(self, sample, timestep):
        emb = self.time_proj(timestep.to(sample.dtype)[:, None] / 1000.0)
        return self.conv(sample) + emb[:, :, None, None]


def consistency_training_loss(unet, noise_scheduler, clean_images, noise, indices):
    timesteps = noise_scheduler.timesteps[indices]
    sigmas = noise_scheduler.sigmas[indices].to(clean_images.dtype)
    noisy_images = noise_scheduler.add_noise(clean_images, noise, timesteps)
    sigma_data = noise_scheduler.config.sigma_data
    scaled = noisy_images / ((sigmas**2 + sigma_data**2) ** 0.5)[:, None, None, None]
    model_output = unet(scaled, timesteps)
    c_skip, c_out = noise_scheduler.get_scalings_for_boundary_condition(sigmas)
    denoised = c_out[:, None, None, None] * model_output + c_skip[:, None, None, None] * noisy_images
    return F.mse_loss(denoised.float(), clean_images.float())


compiled_loss = torch.compile(consistency_training_loss)


def make():
    torch.manual_seed(0)
    scheduler = CMStochasticIterativeScheduler(num_train_timesteps=40)
    unet = TinyUNet()
    clean = torch.randn(2, 3, 8, 8).clamp(-1, 1)
    noise = torch.randn(2, 3, 8, 8)
    indices = torch.tensor([3, 25])
    return consistency_training_loss, [(unet, scheduler, clean, noise, indices)]
