"""diffusers HeunDiscreteScheduler.step: tensors stored on the scheduler between calls (prev_derivative, dt, sample), a step_index begin path.

Source: huggingface/diffusers@58eb52c080:src/diffusers/schedulers/scheduling_heun_discrete.py:539-659
Kept: state_in_first_order (`self.dt is None`), the sigma / sigma_next pick
by order, the prediction_type switch, clip_sample, the first-order branch
storing prev_derivative/dt/sample on self and the second-order branch
averaging and clearing them, `_step_index += 1`, the tuple return.
Simplified: begin_index is set (set_begin_index), so no timestep lookup;
3 sigmas; two step calls per compiled function (first then second order).
"""
import torch


class Config:
    prediction_type = "epsilon"
    clip_sample = False
    clip_sample_range = 1.0


class HeunDiscreteScheduler:
    def __init__(self):
        self.config = Config()
        self.sigmas = torch.tensor([2.0, 2.0, 1.0, 1.0, 0.0])
        self._step_index = None
        self._begin_index = 0
        self.dt = None

    @property
    def state_in_first_order(self):
        return self.dt is None

    @property
    def step_index(self):
        return self._step_index

    def _init_step_index(self, timestep):
        self._step_index = self._begin_index

    def step(self, model_output, timestep, sample, return_dict=True):
        if self.step_index is None:
            self._init_step_index(timestep)
        if self.state_in_first_order:
            sigma = self.sigmas[self.step_index]
            sigma_next = self.sigmas[self.step_index + 1]
        else:
            sigma = self.sigmas[self.step_index - 1]
            sigma_next = self.sigmas[self.step_index]
        gamma = 0
        sigma_hat = sigma * (gamma + 1)
        if self.config.prediction_type == "epsilon":
            sigma_input = sigma_hat if self.state_in_first_order else sigma_next
            pred_original_sample = sample - sigma_input * model_output
        elif self.config.prediction_type == "sample":
            pred_original_sample = model_output
        else:
            raise ValueError(f"prediction_type given as {self.config.prediction_type} must be one of `epsilon`, or `v_prediction`")
        if self.config.clip_sample:
            pred_original_sample = pred_original_sample.clamp(-self.config.clip_sample_range, self.config.clip_sample_range)
        if self.state_in_first_order:
            derivative = (sample - pred_original_sample) / sigma_hat
            dt = sigma_next - sigma_hat
            self.prev_derivative = derivative
            self.dt = dt
            self.sample = sample
        else:
            derivative = (sample - pred_original_sample) / sigma_next
            derivative = (self.prev_derivative + derivative) / 2
            dt = self.dt
            sample = self.sample
            self.prev_derivative = None
            self.dt = None
            self.sample = None
        prev_sample = sample + derivative * dt
        self._step_index += 1
        if not return_dict:
            return (prev_sample, pred_original_sample)
        return {"prev_sample": prev_sample, "pred_original_sample": pred_original_sample}


def heun_two_evaluations(unet, latents, t):
    scheduler = HeunDiscreteScheduler()
    latents = scheduler.step(unet(latents), t, latents, return_dict=False)[0]
    return scheduler.step(unet(latents), t, latents, return_dict=False)[0]


unet = torch.nn.Linear(4, 4)
compiled_step = torch.compile(heun_two_evaluations)


def make():
    torch.manual_seed(0)
    return heun_two_evaluations, [(torch.nn.Linear(4, 4), torch.randn(2, 4), torch.tensor(999.0))]
