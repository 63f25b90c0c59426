"""diffusers DDIMScheduler.step: a tensor timestep makes `prev_timestep >= 0` a tensor condition and indexes alphas_cumprod with a 0-d tensor.

Source: huggingface/diffusers@58eb52c080:src/diffusers/schedulers/scheduling_ddim.py:262-288,384-514
Kept: the num_inference_steps ValueError, prev_timestep arithmetic,
alphas_cumprod indexing with the final_alpha_cumprod fallback, the
prediction_type switch, clip_sample, _get_variance, eta / variance_noise
handling (generator conflict ValueError) and the return_dict tuple.
Simplified: 20 train steps, 4 inference steps; eta 0.
"""
import torch


class Config:
    num_train_timesteps = 20
    prediction_type = "epsilon"
    thresholding = False
    clip_sample = True
    clip_sample_range = 1.0


class DDIMScheduler:
    def __init__(self):
        self.config = Config()
        betas = torch.linspace(1e-4, 0.02, 20)
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.final_alpha_cumprod = torch.tensor(1.0)
        self.num_inference_steps = 4

    def _get_variance(self, timestep, prev_timestep):
        alpha_prod_t = self.alphas_cumprod[timestep]
        alpha_prod_t_prev = self.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else self.final_alpha_cumprod
        beta_prod_t = 1 - alpha_prod_t
        beta_prod_t_prev = 1 - alpha_prod_t_prev
        return (beta_prod_t_prev / beta_prod_t) * (1 - alpha_prod_t / alpha_prod_t_prev)

    def step(self, model_output, timestep, sample, eta=0.0, use_clipped_model_output=False, generator=None, variance_noise=None, return_dict=True):
        if self.num_inference_steps is None:
            raise ValueError("Number of inference steps is 'None', you need to run 'set_timesteps' after creating the scheduler")
        prev_timestep = timestep - self.config.num_train_timesteps // self.num_inference_steps
        alpha_prod_t = self.alphas_cumprod[timestep]
        alpha_prod_t_prev = self.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else self.final_alpha_cumprod
        beta_prod_t = 1 - alpha_prod_t
        if self.config.prediction_type == "epsilon":
            pred_original_sample = (sample - beta_prod_t ** (0.5) * model_output) / alpha_prod_t ** (0.5)
            pred_epsilon = model_output
        elif self.config.prediction_type == "sample":
            pred_original_sample = model_output
            pred_epsilon = (sample - alpha_prod_t ** (0.5) * pred_original_sample) / beta_prod_t ** (0.5)
        else:
            raise ValueError(f"prediction_type given as {self.config.prediction_type} must be one of `epsilon`, `sample`")
        if self.config.thresholding:
            raise NotImplementedError
        elif self.config.clip_sample:
            pred_original_sample = pred_original_sample.clamp(-self.config.clip_sample_range, self.config.clip_sample_range)
        variance = self._get_variance(timestep, prev_timestep)
        std_dev_t = eta * variance ** (0.5)
        if use_clipped_model_output:
            pred_epsilon = (sample - alpha_prod_t ** (0.5) * pred_original_sample) / beta_prod_t ** (0.5)
        pred_sample_direction = (1 - alpha_prod_t_prev - std_dev_t**2) ** (0.5) * pred_epsilon
        prev_sample = alpha_prod_t_prev ** (0.5) * pred_original_sample + pred_sample_direction
        if eta > 0:
            if variance_noise is not None and generator is not None:
                raise ValueError("Cannot pass both generator and variance_noise.")
            if variance_noise is None:
                variance_noise = torch.randn(model_output.shape, device=model_output.device, dtype=model_output.dtype)
            prev_sample = prev_sample + std_dev_t * variance_noise
        if not return_dict:
            return (prev_sample, pred_original_sample)
        return {"prev_sample": prev_sample, "pred_original_sample": pred_original_sample}


scheduler = DDIMScheduler()


def ddim_step(noise_pred, t, latents):
    return scheduler.step(noise_pred, t, latents, return_dict=False)[0]


step_fn = torch.compile(ddim_step)


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 2, 3)
    return ddim_step, [(torch.randn(1, 2, 3), t, x) for t in (torch.tensor(15), torch.tensor(0))]
