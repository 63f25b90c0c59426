"""diffusers DDPMPipeline.__call__ compiled whole: the @torch.compiler.disable'd progress_bar and its tqdm writing to stdout.

Source: huggingface/diffusers@58eb52c080:src/diffusers/pipelines/ddpm/pipeline_ddpm.py:55-130; src/diffusers/pipelines/pipeline_utils.py:1998-2018
Kept: __call__ under @torch.no_grad() (image_shape from unet.config with the
int / tuple sample_size switch, the mps branch around randn, set_timesteps,
`for t in self.progress_bar(self.scheduler.timesteps)`, unet(...).sample,
scheduler.step(...).prev_sample, the XLA mark_step flag, clamp, cpu/permute/
numpy, the return_dict tuple); progress_bar (the @torch.compiler.disable
decorator, the _progress_bar_config dict checks with their ValueErrors, the
"disable" default from the rank check, tqdm over an iterable or a total).
Simplified: tqdm is a small stand-in that writes "\\r{desc}{n}/{total}" with
sys.stdout.write and flush as tqdm does; the BaseOutput classes are plain
dataclasses; the UNet is a conv; the scheduler
step is DDPM's mean update without the variance noise; output_type "pil" is
not offered (no PIL), "np" is.
"""
import sys
from dataclasses import dataclass
from types import SimpleNamespace

import torch
from torch import nn

XLA_AVAILABLE = False


def is_torch_dist_rank_zero():
    return True


class tqdm:
    def __init__(self, iterable=None, total=None, disable=False, desc=""):
        self.iterable = iterable
        self.total = total if total is not None else len(iterable)
        self.disable = disable
        self.desc = desc
        self.n = 0

    def __iter__(self):
        for obj in self.iterable:
            yield obj
            self.update(1)
        self.close()

    def update(self, n=1):
        self.n += n
        if not self.disable:
            sys.stdout.write(f"\r{self.desc}{self.n}/{self.total}")
            sys.stdout.flush()

    def close(self):
        if not self.disable:
            sys.stdout.write("\n")


@dataclass
class UNet2DOutput:
    sample: torch.Tensor


@dataclass
class DDPMSchedulerOutput:
    prev_sample: torch.Tensor
    pred_original_sample: torch.Tensor = None


class UNet2DModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = SimpleNamespace(sample_size=4, in_channels=2)
        self.conv = nn.Conv2d(2, 2, 3, padding=1)
        self.time_proj = nn.Linear(1, 2)

    @property
    def dtype(self):
        return self.conv.weight.dtype

    def forward(self, sample, timestep):
        emb = self.time_proj(timestep.float().reshape(1, 1) / 1000.0)[:, :, None, None]
        return UNet2DOutput(sample=self.conv(sample) + emb)


class DDPMScheduler:
    def __init__(self, num_train_timesteps=10):
        self.num_train_timesteps = num_train_timesteps
        self.alphas_cumprod = torch.cumprod(1.0 - torch.linspace(0.0001, 0.02, num_train_timesteps), dim=0)
        self.timesteps = torch.arange(num_train_timesteps).flip(0)

    def set_timesteps(self, num_inference_steps):
        step_ratio = self.num_train_timesteps // num_inference_steps
        self.timesteps = (torch.arange(0, num_inference_steps) * step_ratio).flip(0)

    def step(self, model_output, timestep, sample, generator=None):
        alpha_prod_t = self.alphas_cumprod[timestep]
        beta_prod_t = 1 - alpha_prod_t
        pred_original_sample = (sample - beta_prod_t ** (0.5) * model_output) / alpha_prod_t ** (0.5)
        pred_original_sample = pred_original_sample.clamp(-1.0, 1.0)
        prev_sample = alpha_prod_t ** (0.5) * pred_original_sample + beta_prod_t ** (0.5) * model_output
        return DDPMSchedulerOutput(prev_sample=prev_sample, pred_original_sample=pred_original_sample)


class DDPMPipeline:
    def __init__(self, unet, scheduler):
        self.unet = unet
        self.scheduler = scheduler

    @property
    def device(self):
        return self.unet.conv.weight.device

    @torch.compiler.disable
    def progress_bar(self, iterable=None, total=None):
        if not hasattr(self, "_progress_bar_config"):
            self._progress_bar_config = {}
        elif not isinstance(self._progress_bar_config, dict):
            raise ValueError(
                f"`self._progress_bar_config` should be of type `dict`, but is {type(self._progress_bar_config)}."
            )

        progress_bar_config = dict(self._progress_bar_config)
        if "disable" not in progress_bar_config:
            progress_bar_config["disable"] = not is_torch_dist_rank_zero()

        if iterable is not None:
            return tqdm(iterable, **progress_bar_config)
        elif total is not None:
            return tqdm(total=total, **progress_bar_config)
        else:
            raise ValueError("Either `total` or `iterable` has to be defined.")

    def set_progress_bar_config(self, **kwargs):
        self._progress_bar_config = kwargs

    @torch.no_grad()
    def __call__(self, batch_size=1, generator=None, num_inference_steps=1000, output_type="pil", return_dict=True):
        if isinstance(self.unet.config.sample_size, int):
            image_shape = (
                batch_size,
                self.unet.config.in_channels,
                self.unet.config.sample_size,
                self.unet.config.sample_size,
            )
        else:
            image_shape = (batch_size, self.unet.config.in_channels, *self.unet.config.sample_size)

        if self.device.type == "mps":
            image = torch.randn(image_shape, generator=generator, dtype=self.unet.dtype)
            image = image.to(self.device)
        else:
            image = torch.randn(image_shape, generator=generator, device=self.device, dtype=self.unet.dtype)

        self.scheduler.set_timesteps(num_inference_steps)

        for t in self.progress_bar(self.scheduler.timesteps):
            model_output = self.unet(image, t).sample

            image = self.scheduler.step(model_output, t, image, generator=generator).prev_sample

            if XLA_AVAILABLE:
                pass

        image = (image / 2 + 0.5).clamp(0, 1)
        image = image.cpu().permute(0, 2, 3, 1).numpy()

        if not return_dict:
            return (image,)

        return {"images": image}


def main():
    torch.manual_seed(0)
    pipe = DDPMPipeline(UNet2DModel(), DDPMScheduler())
    pipe.set_progress_bar_config(desc="denoise ")
    generate = torch.compile(pipe.__call__, dynamic=False)
    return generate(batch_size=1, num_inference_steps=3, output_type="np")


def make():
    torch.manual_seed(0)
    pipe = DDPMPipeline(UNet2DModel(), DDPMScheduler())
    pipe.set_progress_bar_config(desc="denoise ")
    return pipe.__call__, [(1, None, 3, "np", True), (2, None, 2, "np", False)]
