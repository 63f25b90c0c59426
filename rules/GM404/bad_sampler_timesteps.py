"""GM404 bad: a diffusion sampler steps through its scheduler's timesteps (diffusers' DDPM loop).

`set_timesteps` keeps `(torch.arange(0, steps) * ratio).flip(0)`, a 1-d tensor, so each `t` of
`for t in self.scheduler.timesteps` is a 0-d tensor. `step` reads `self.alphas_cumprod[timestep]`
with it: the index goes through `__index__`, and Dynamo converts it to a Python int (GB0033) at every
step. After a break in a loop Dynamo runs the rest of the function eagerly.
"""
import torch


class Scheduler:
    def __init__(self, num_train_timesteps: int = 10) -> None:
        self.num_train_timesteps = num_train_timesteps
        self.alphas_cumprod = torch.cumprod(1.0 - torch.linspace(1e-4, 0.02, num_train_timesteps), dim=0)
        self.timesteps = torch.arange(num_train_timesteps).flip(0)

    def set_timesteps(self, num_inference_steps: int) -> None:
        ratio = self.num_train_timesteps // num_inference_steps
        self.timesteps = (torch.arange(0, num_inference_steps) * ratio).flip(0)

    def step(self, model_output, timestep, sample):
        alpha_prod_t = self.alphas_cumprod[timestep]
        return sample * alpha_prod_t.sqrt() + model_output * (1 - alpha_prod_t).sqrt()


class Pipeline:
    def __init__(self) -> None:
        self.scheduler = Scheduler()

    def __call__(self, sample: torch.Tensor, num_inference_steps: int = 5) -> torch.Tensor:
        self.scheduler.set_timesteps(num_inference_steps)
        for t in self.scheduler.timesteps:
            sample = self.scheduler.step(sample * 0.5, t, sample)
        return sample


pipe = Pipeline()
generate = torch.compile(pipe.__call__)


def make():
    """Return (eager_callable, input_sets)."""
    torch.manual_seed(0)
    return Pipeline().__call__, [(torch.randn(2, 3),)]


if __name__ == "__main__":
    fn, inputs = make()
    for args in inputs:
        print(fn(*args))
