"""diffusers training_utils.compute_snr in a min-SNR weighted training loss: gathers by timesteps, while-loops on ndim (no break).

Source: huggingface/diffusers@58eb52c080:src/diffusers/training_utils.py:81-115; examples/text_to_image/train_text_to_image.py (snr_gamma loss)
Kept: compute_snr verbatim (the two `while len(x.shape) < len(timesteps.shape)`
loops over Python ints, expand, (alpha/sigma)**2), and the example's
min-SNR-gamma weighting with prediction_type epsilon / v_prediction and the
per-sample mse mean.
Simplified: noise scheduler holds 20 alphas_cumprod; the "unet" is a linear.
"""
import torch
import torch.nn.functional as F


class NoiseScheduler:
    def __init__(self):
        self.alphas_cumprod = torch.cumprod(1 - torch.linspace(1e-4, 0.02, 20), dim=0)
        self.prediction_type = "epsilon"


def compute_snr(noise_scheduler, timesteps):
    alphas_cumprod = noise_scheduler.alphas_cumprod
    sqrt_alphas_cumprod = alphas_cumprod**0.5
    sqrt_one_minus_alphas_cumprod = (1.0 - alphas_cumprod) ** 0.5
    sqrt_alphas_cumprod = sqrt_alphas_cumprod.to(device=timesteps.device)[timesteps].float()
    while len(sqrt_alphas_cumprod.shape) < len(timesteps.shape):
        sqrt_alphas_cumprod = sqrt_alphas_cumprod[..., None]
    alpha = sqrt_alphas_cumprod.expand(timesteps.shape)
    sqrt_one_minus_alphas_cumprod = sqrt_one_minus_alphas_cumprod.to(device=timesteps.device)[timesteps].float()
    while len(sqrt_one_minus_alphas_cumprod.shape) < len(timesteps.shape):
        sqrt_one_minus_alphas_cumprod = sqrt_one_minus_alphas_cumprod[..., None]
    sigma = sqrt_one_minus_alphas_cumprod.expand(timesteps.shape)
    snr = (alpha / sigma) ** 2
    return snr


noise_scheduler = NoiseScheduler()
unet = torch.nn.Linear(4, 4)


def training_loss(noisy_latents, target, timesteps, snr_gamma=None):
    model_pred = unet(noisy_latents)
    if snr_gamma is None:
        return F.mse_loss(model_pred.float(), target.float(), reduction="mean")
    snr = compute_snr(noise_scheduler, timesteps)
    mse_loss_weights = torch.stack([snr, snr_gamma * torch.ones_like(timesteps)], dim=1).min(dim=1)[0]
    if noise_scheduler.prediction_type == "epsilon":
        mse_loss_weights = mse_loss_weights / snr
    elif noise_scheduler.prediction_type == "v_prediction":
        mse_loss_weights = mse_loss_weights / (snr + 1)
    loss = F.mse_loss(model_pred.float(), target.float(), reduction="none")
    loss = loss.mean(dim=list(range(1, len(loss.shape)))) * mse_loss_weights
    return loss.mean()


loss_fn = torch.compile(training_loss)


def make():
    torch.manual_seed(0)
    x, target = torch.randn(3, 4), torch.randn(3, 4)
    return training_loss, [(x, target, torch.tensor([1, 10, 19])), (x, target, torch.tensor([1, 10, 19]), 5.0)]
