"""diffusers DDPMScheduler.add_noise inside a compiled diffusion training step: gather by random timesteps, while-loop unsqueeze on ranks (no break).

Source: huggingface/diffusers@58eb52c080:src/diffusers/schedulers/scheduling_ddpm.py:569-609; examples/unconditional_image_generation/train_unconditional.py (training step)
Kept: add_noise verbatim (the `self.alphas_cumprod = ...to(device)`
attribute rebinding, dtype cast, indexing by the timestep tensor, flatten and
the two while-loops on len(shape)), and the example's step: randn noise,
randint timesteps over num_train_timesteps, the epsilon/sample prediction
type switch and mse loss.
Simplified: the UNet is a 1x1 conv; 20 train steps.
"""
import torch
import torch.nn.functional as F


class DDPMScheduler:
    def __init__(self):
        self.alphas_cumprod = torch.cumprod(1 - torch.linspace(1e-4, 0.02, 20), dim=0)
        self.num_train_timesteps = 20
        self.prediction_type = "epsilon"

    def add_noise(self, original_samples, noise, timesteps):
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
        return sqrt_alpha_prod * original_samples + sqrt_one_minus_alpha_prod * noise


noise_scheduler = DDPMScheduler()
model = torch.nn.Conv2d(3, 3, 1)


def train_step(clean_images):
    noise = torch.randn(clean_images.shape, dtype=clean_images.dtype, device=clean_images.device)
    bsz = clean_images.shape[0]
    timesteps = torch.randint(0, noise_scheduler.num_train_timesteps, (bsz,), device=clean_images.device, dtype=torch.int64)
    noisy_images = noise_scheduler.add_noise(clean_images, noise, timesteps)
    model_output = model(noisy_images)
    if noise_scheduler.prediction_type == "epsilon":
        loss = F.mse_loss(model_output.float(), noise.float())
    elif noise_scheduler.prediction_type == "sample":
        loss = F.mse_loss(model_output.float(), clean_images.float())
    else:
        raise ValueError(f"Unsupported prediction type: {noise_scheduler.prediction_type}")
    return loss


compiled_step = torch.compile(train_step)


def make():
    torch.manual_seed(0)
    return train_step, [(torch.rand(2, 3, 4, 4),)]
