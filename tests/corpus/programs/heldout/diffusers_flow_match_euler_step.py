"""diffusers FlowMatchEulerDiscreteScheduler.step (Flux/SD3): integer-timestep ValueError, index_for_timestep's nonzero/.item(), per-token sigmas.

Source: huggingface/diffusers@58eb52c080:src/diffusers/schedulers/scheduling_flow_match_euler_discrete.py:384-522
Kept: the int/IntTensor/LongTensor ValueError, _init_step_index with
begin_index, index_for_timestep, the per_token_timesteps branch (lower mask,
max over sigmas) and the plain sigma/sigma_next branch, stochastic_sampling,
`_step_index += 1`, dtype cast and the tuple return; called inside a compiled
denoising step with the transformer.
Simplified: 4 steps; transformer is a linear layer.
"""
import torch
from torch import nn


class Config:
    num_train_timesteps = 1000
    stochastic_sampling = False


class FlowMatchEulerDiscreteScheduler:
    def __init__(self):
        self.config = Config()
        self.sigmas = torch.cat([torch.linspace(1.0, 0.25, 4), torch.zeros(1)])
        self.timesteps = self.sigmas[:-1] * self.config.num_train_timesteps
        self._step_index = None
        self._begin_index = None

    @property
    def step_index(self):
        return self._step_index

    @property
    def begin_index(self):
        return self._begin_index

    def index_for_timestep(self, timestep, schedule_timesteps=None):
        if schedule_timesteps is None:
            schedule_timesteps = self.timesteps
        indices = (schedule_timesteps == timestep).nonzero()
        pos = 1 if len(indices) > 1 else 0
        return indices[pos].item()

    def _init_step_index(self, timestep):
        if self.begin_index is None:
            if isinstance(timestep, torch.Tensor):
                timestep = timestep.to(self.timesteps.device)
            self._step_index = self.index_for_timestep(timestep)
        else:
            self._step_index = self._begin_index

    def step(self, model_output, timestep, sample, per_token_timesteps=None, return_dict=True):
        if isinstance(timestep, int) or isinstance(timestep, torch.IntTensor) or isinstance(timestep, torch.LongTensor):
            raise ValueError("Passing integer indices (e.g. from `enumerate(timesteps)`) as timesteps is not supported.")
        if self.step_index is None:
            self._init_step_index(timestep)
        sample = sample.to(torch.float32)
        if per_token_timesteps is not None:
            per_token_sigmas = per_token_timesteps / self.config.num_train_timesteps
            sigmas = self.sigmas[:, None, None]
            lower_mask = sigmas < per_token_sigmas[None] - 1e-6
            lower_sigmas = lower_mask * sigmas
            lower_sigmas, _ = lower_sigmas.max(dim=0)
            current_sigma = per_token_sigmas[..., None]
            next_sigma = lower_sigmas[..., None]
            dt = current_sigma - next_sigma
        else:
            sigma_idx = self.step_index
            sigma = self.sigmas[sigma_idx]
            sigma_next = self.sigmas[sigma_idx + 1]
            current_sigma = sigma
            next_sigma = sigma_next
            dt = sigma_next - sigma
        if self.config.stochastic_sampling:
            x0 = sample - current_sigma * model_output
            noise = torch.randn(sample.shape, device=sample.device, dtype=sample.dtype)
            prev_sample = (1.0 - next_sigma) * x0 + next_sigma * noise
        else:
            prev_sample = sample + dt * model_output
        self._step_index += 1
        if per_token_timesteps is None:
            prev_sample = prev_sample.to(model_output.dtype)
        if not return_dict:
            return (prev_sample,)
        return {"prev_sample": prev_sample}


class Pipeline(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.Linear(4, 4)
        self.scheduler = FlowMatchEulerDiscreteScheduler()

    def forward(self, latents, t, per_token_timesteps=None):
        noise_pred = self.transformer(latents)
        return self.scheduler.step(noise_pred, t, latents, per_token_timesteps=per_token_timesteps, return_dict=False)[0]


def make():
    torch.manual_seed(0)
    pipe = Pipeline()
    t0 = pipe.scheduler.timesteps[0]
    return Pipeline(), [(torch.randn(1, 3, 4), t0), (torch.randn(1, 3, 4), t0, torch.full((1, 3), 500.0))]


@torch.compile
def denoise(pipe, latents, t):
    return pipe(latents, t)
