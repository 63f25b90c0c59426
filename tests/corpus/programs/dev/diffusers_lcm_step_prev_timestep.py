"""diffusers LCMScheduler.step: step index from index_for_timestep (nonzero/.item()), `prev_timestep >= 0` on a schedule tensor.

Source: huggingface/diffusers@58eb52c080:src/diffusers/schedulers/scheduling_lcm.py:548-664
Kept: the num_inference_steps ValueError, _init_step_index /
index_for_timestep, prev_step_index lookup into self.timesteps, alphas_cumprod
indexing with the final_alpha_cumprod fallback, get_scalings_for_boundary_
condition_discrete (which sets self.sigma_data), the prediction_type switch,
clip_sample, the denoised mix, the `step_index != num_inference_steps - 1`
noise branch and `_step_index += 1`.
Simplified: 4 inference steps over 20 train steps; randn instead of randn_tensor.
"""
import torch


class Config:
    timestep_scaling = 10.0
    prediction_type = "epsilon"
    thresholding = False
    clip_sample = False
    clip_sample_range = 1.0


class LCMScheduler:
    def __init__(self):
        self.config = Config()
        self.alphas_cumprod = torch.cumprod(1 - torch.linspace(1e-4, 0.02, 20), dim=0)
        self.final_alpha_cumprod = torch.tensor(1.0)
        self.num_inference_steps = 4
        self.timesteps = torch.tensor([19, 14, 9, 4])
        self._step_index = None
        self._begin_index = None

    @property
    def step_index(self):
        return self._step_index

    def index_for_timestep(self, timestep, schedule_timesteps=None):
        if schedule_timesteps is None:
            schedule_timesteps = self.timesteps
        indices = (schedule_timesteps == timestep).nonzero()
        pos = 1 if len(indices) > 1 else 0
        return indices[pos].item()

    def _init_step_index(self, timestep):
        if self._begin_index is None:
            if isinstance(timestep, torch.Tensor):
                timestep = timestep.to(self.timesteps.device)
            self._step_index = self.index_for_timestep(timestep)
        else:
            self._step_index = self._begin_index

    def get_scalings_for_boundary_condition_discrete(self, timestep):
        self.sigma_data = 0.5
        scaled_timestep = timestep * self.config.timestep_scaling
        c_skip = self.sigma_data**2 / (scaled_timestep**2 + self.sigma_data**2)
        c_out = scaled_timestep / (scaled_timestep**2 + self.sigma_data**2) ** 0.5
        return c_skip, c_out

    def step(self, model_output, timestep, sample, generator=None, return_dict=True):
        if self.num_inference_steps is None:
            raise ValueError("Number of inference steps is 'None', you need to run 'set_timesteps' after creating the scheduler")
        if self.step_index is None:
            self._init_step_index(timestep)
        prev_step_index = self.step_index + 1
        if prev_step_index < len(self.timesteps):
            prev_timestep = self.timesteps[prev_step_index]
        else:
            prev_timestep = timestep
        alpha_prod_t = self.alphas_cumprod[timestep]
        alpha_prod_t_prev = self.alphas_cumprod[prev_timestep] if prev_timestep >= 0 else self.final_alpha_cumprod
        beta_prod_t = 1 - alpha_prod_t
        beta_prod_t_prev = 1 - alpha_prod_t_prev
        c_skip, c_out = self.get_scalings_for_boundary_condition_discrete(timestep)
        if self.config.prediction_type == "epsilon":
            predicted_original_sample = (sample - beta_prod_t.sqrt() * model_output) / alpha_prod_t.sqrt()
        elif self.config.prediction_type == "sample":
            predicted_original_sample = model_output
        else:
            raise ValueError(f"prediction_type given as {self.config.prediction_type} must be one of `epsilon`, `sample`")
        if self.config.thresholding:
            raise NotImplementedError
        elif self.config.clip_sample:
            predicted_original_sample = predicted_original_sample.clamp(-self.config.clip_sample_range, self.config.clip_sample_range)
        denoised = c_out * predicted_original_sample + c_skip * sample
        if self.step_index != self.num_inference_steps - 1:
            noise = torch.randn(model_output.shape, generator=generator, device=model_output.device, dtype=denoised.dtype)
            prev_sample = alpha_prod_t_prev.sqrt() * denoised + beta_prod_t_prev.sqrt() * noise
        else:
            prev_sample = denoised
        self._step_index += 1
        if not return_dict:
            return (prev_sample, denoised)
        return {"prev_sample": prev_sample, "denoised": denoised}


class LCMPipelineStep(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.unet = torch.nn.Linear(4, 4)
        self.scheduler = LCMScheduler()

    def forward(self, latents, t):
        model_pred = self.unet(latents)
        latents, denoised = self.scheduler.step(model_pred, t, latents, return_dict=False)
        return latents, denoised


step = torch.compile(LCMPipelineStep())


def make():
    torch.manual_seed(0)
    return LCMPipelineStep(), [(torch.randn(1, 4), torch.tensor(19)), (torch.randn(1, 4), torch.tensor(4))]
