"""diffusers DDPMScheduler.step with a tensor timestep: previous_timestep's nonzero, `prev_t >= 0` and `if t > 0:`.

Source: huggingface/diffusers@58eb52c080:src/diffusers/schedulers/scheduling_ddpm.py:348-416,461-567,648-668
Kept: previous_timestep (custom/num_inference_steps branch with the
nonzero-index and the `index == len - 1` check), the learned-variance split,
alphas_cumprod indexing, `... if prev_t >= 0 else self.one`, the
prediction_type switch, clip_sample, the `if t > 0:` variance branch with
_get_variance (fixed_small), and the tuple return.
Simplified: 4 inference steps over 20 train steps; randn instead of randn_tensor.
"""
import torch


class Config:
    prediction_type = "epsilon"
    thresholding = False
    clip_sample = True
    clip_sample_range = 1.0
    variance_type = "fixed_small"


class DDPMScheduler:
    def __init__(self):
        self.config = Config()
        betas = torch.linspace(1e-4, 0.02, 20)
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.one = torch.tensor(1.0)
        self.custom_timesteps = False
        self.num_inference_steps = 4
        self.timesteps = torch.tensor([15, 10, 5, 0])
        self.variance_type = self.config.variance_type

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
        elif variance_type == "fixed_large":
            variance = current_beta_t
        return variance

    def step(self, model_output, timestep, sample, return_dict=True):
        t = timestep
        prev_t = self.previous_timestep(t)
        if model_output.shape[1] == sample.shape[1] * 2 and self.variance_type in ["learned", "learned_range"]:
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
        else:
            raise ValueError(f"prediction_type given as {self.config.prediction_type} must be one of `epsilon`, `sample`")
        if self.config.thresholding:
            raise NotImplementedError
        elif self.config.clip_sample:
            pred_original_sample = pred_original_sample.clamp(-self.config.clip_sample_range, self.config.clip_sample_range)
        pred_original_sample_coeff = (alpha_prod_t_prev ** (0.5) * current_beta_t) / beta_prod_t
        current_sample_coeff = current_alpha_t ** (0.5) * beta_prod_t_prev / beta_prod_t
        pred_prev_sample = pred_original_sample_coeff * pred_original_sample + current_sample_coeff * sample
        variance = 0
        if t > 0:
            variance_noise = torch.randn(model_output.shape, device=model_output.device, dtype=model_output.dtype)
            variance = (self._get_variance(t, predicted_variance=predicted_variance) ** 0.5) * variance_noise
        pred_prev_sample = pred_prev_sample + variance
        if not return_dict:
            return (pred_prev_sample, pred_original_sample)
        return {"prev_sample": pred_prev_sample, "pred_original_sample": pred_original_sample}


scheduler = DDPMScheduler()


@torch.compile(dynamic=False)
def sample_step(noise_pred, t, latents):
    return scheduler.step(noise_pred, t, latents, return_dict=False)[0]


def make():
    torch.manual_seed(0)
    x = torch.randn(1, 2, 3)
    return sample_step._torchdynamo_orig_callable, [(torch.randn(1, 2, 3), torch.tensor(10), x), (torch.randn(1, 2, 3), torch.tensor(0), x)]
