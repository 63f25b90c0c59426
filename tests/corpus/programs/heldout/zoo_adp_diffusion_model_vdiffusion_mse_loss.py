"""audio-diffusion-pytorch DiffusionModel training forward: `model(audio)` -> VDiffusion samples sigmas from a plain-Python `UniformDistribution` callable, `extend_dim` via `x.view(*x.shape + (1,) * k)`, v-target and `self.loss_fn` (F.mse_loss) stored as an attribute.

Source: archinetai/audio-diffusion-pytorch@f4052e321c820e467e51e14d005f3d0077997278:audio_diffusion_pytorch/diffusion.py:15-95
Also: audio_diffusion_pytorch/utils.py (exists, default, group_dict_by_prefix, groupby) and
audio_diffusion_pytorch/models.py:22-45 (DiffusionModel), same commit.
Kept: those verbatim, with the README's `DiffusionModel(net_t=UNetV0, in_channels=2, channels=[...],
diffusion_t=VDiffusion, sampler_t=VSampler)` construction.
Simplified: UNetV0 (from the external a_unet package) is replaced by a two-conv `TinyUNet` with
the same `net(x, time, **kwargs)` call; `einops.repeat(x, "i -> i b")` is spelled with
unsqueeze/expand; `tqdm` is a small stand-in class with the same `disable` / `set_description`
behaviour (VSampler is only constructed here, never called).
"""
from inspect import isfunction
from math import pi
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar, Union

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor

T = TypeVar("T")


class tqdm:
    """Stand-in for tqdm.tqdm: iterates, keeps the description, draws nothing when disabled."""

    def __init__(self, iterable, disable=False):
        self.iterable = iterable
        self.disable = disable
        self.desc = ""

    def __iter__(self):
        return iter(self.iterable)

    def set_description(self, desc=None, refresh=True):
        self.desc = desc + ': ' if desc else ''
        if refresh:
            self.refresh()

    def refresh(self):
        if self.disable:
            return


def repeat_i_b(x: Tensor, b: int) -> Tensor:
    # einops.repeat(x, "i -> i b", b=b)
    return x.unsqueeze(1).expand(x.shape[0], b).contiguous()


""" utils.py """


def exists(val: Optional[T]) -> bool:
    return val is not None


def default(val: Optional[T], d: Union[Callable[..., T], T]) -> T:
    if exists(val):
        return val
    return d() if isfunction(d) else d


def group_dict_by_prefix(prefix: str, d: Dict) -> Tuple[Dict, Dict]:
    return_dicts: Tuple[Dict, Dict] = ({}, {})
    for key in d.keys():
        no_prefix = int(not key.startswith(prefix))
        return_dicts[no_prefix][key] = d[key]
    return return_dicts


def groupby(prefix: str, d: Dict, keep_prefix: bool = False) -> Tuple[Dict, Dict]:
    kwargs_with_prefix, kwargs = group_dict_by_prefix(prefix, d)
    if keep_prefix:
        return kwargs_with_prefix, kwargs
    kwargs_no_prefix = {k[len(prefix) :]: v for k, v in kwargs_with_prefix.items()}
    return kwargs_no_prefix, kwargs


""" diffusion.py """


class Distribution:
    """Interface used by different distributions"""

    def __call__(self, num_samples: int, device: torch.device):
        raise NotImplementedError()


class UniformDistribution(Distribution):
    def __init__(self, vmin: float = 0.0, vmax: float = 1.0):
        super().__init__()
        self.vmin, self.vmax = vmin, vmax

    def __call__(self, num_samples: int, device: torch.device = torch.device("cpu")):
        vmax, vmin = self.vmax, self.vmin
        return (vmax - vmin) * torch.rand(num_samples, device=device) + vmin


def extend_dim(x: Tensor, dim: int):
    # e.g. if dim = 4: shape [b] => [b, 1, 1, 1],
    return x.view(*x.shape + (1,) * (dim - x.ndim))


class Diffusion(nn.Module):
    """Interface used by different diffusion methods"""

    pass


class VDiffusion(Diffusion):
    def __init__(
        self, net: nn.Module, sigma_distribution: Distribution = UniformDistribution(), loss_fn: Any = F.mse_loss
    ):
        super().__init__()
        self.net = net
        self.sigma_distribution = sigma_distribution
        self.loss_fn = loss_fn

    def get_alpha_beta(self, sigmas: Tensor) -> Tuple[Tensor, Tensor]:
        angle = sigmas * pi / 2
        alpha, beta = torch.cos(angle), torch.sin(angle)
        return alpha, beta

    def forward(self, x: Tensor, **kwargs) -> Tensor:  # type: ignore
        batch_size, device = x.shape[0], x.device
        # Sample amount of noise to add for each batch element
        sigmas = self.sigma_distribution(num_samples=batch_size, device=device)
        sigmas_batch = extend_dim(sigmas, dim=x.ndim)
        # Get noise
        noise = torch.randn_like(x)
        # Combine input and noise weighted by half-circle
        alphas, betas = self.get_alpha_beta(sigmas_batch)
        x_noisy = alphas * x + betas * noise
        v_target = alphas * noise - betas * x
        # Predict velocity and return loss
        v_pred = self.net(x_noisy, sigmas, **kwargs)
        return self.loss_fn(v_pred, v_target)


class Schedule(nn.Module):
    """Interface used by different sampling schedules"""

    def forward(self, num_steps: int, device: torch.device) -> Tensor:
        raise NotImplementedError()


class LinearSchedule(Schedule):
    def __init__(self, start: float = 1.0, end: float = 0.0):
        super().__init__()
        self.start, self.end = start, end

    def forward(self, num_steps: int, device: Any) -> Tensor:
        return torch.linspace(self.start, self.end, num_steps, device=device)


class Sampler(nn.Module):
    pass


class VSampler(Sampler):

    diffusion_types = [VDiffusion]

    def __init__(self, net: nn.Module, schedule: Schedule = LinearSchedule()):
        super().__init__()
        self.net = net
        self.schedule = schedule

    def get_alpha_beta(self, sigmas: Tensor) -> Tuple[Tensor, Tensor]:
        angle = sigmas * pi / 2
        alpha, beta = torch.cos(angle), torch.sin(angle)
        return alpha, beta

    @torch.no_grad()
    def forward(  # type: ignore
        self, x_noisy: Tensor, num_steps: int, show_progress: bool = False, **kwargs
    ) -> Tensor:
        b = x_noisy.shape[0]
        sigmas = self.schedule(num_steps + 1, device=x_noisy.device)
        sigmas = repeat_i_b(sigmas, b=b)
        sigmas_batch = extend_dim(sigmas, dim=x_noisy.ndim + 1)
        alphas, betas = self.get_alpha_beta(sigmas_batch)
        progress_bar = tqdm(range(num_steps), disable=not show_progress)

        for i in progress_bar:
            v_pred = self.net(x_noisy, sigmas[i], **kwargs)
            x_pred = alphas[i] * x_noisy - betas[i] * v_pred
            noise_pred = betas[i] * x_noisy + alphas[i] * v_pred
            x_noisy = alphas[i + 1] * x_pred + betas[i + 1] * noise_pred
            progress_bar.set_description(f"Sampling (noise={sigmas[i+1,0]:.2f})")

        return x_noisy


""" a tiny stand-in for a_unet's UNetV0: net(x, time) -> velocity """


class TinyUNet(nn.Module):
    def __init__(self, dim: int = 1, in_channels: int = 2, channels=(8,), **kwargs):
        super().__init__()
        self.time_mlp = nn.Sequential(nn.Linear(1, channels[0]), nn.SiLU())
        self.conv_in = nn.Conv1d(in_channels, channels[0], 3, padding=1)
        self.conv_out = nn.Conv1d(channels[0], in_channels, 3, padding=1)

    def forward(self, x: Tensor, time: Tensor, **kwargs) -> Tensor:
        h = self.conv_in(x) + self.time_mlp(time[:, None])[..., None]
        return self.conv_out(F.silu(h))


""" models.py """


class DiffusionModel(nn.Module):
    def __init__(
        self,
        net_t: Callable,
        diffusion_t: Callable = VDiffusion,
        sampler_t: Callable = VSampler,
        loss_fn: Callable = torch.nn.functional.mse_loss,
        dim: int = 1,
        **kwargs,
    ):
        super().__init__()
        diffusion_kwargs, kwargs = groupby("diffusion_", kwargs)
        sampler_kwargs, kwargs = groupby("sampler_", kwargs)

        self.net = net_t(dim=dim, **kwargs)
        self.diffusion = diffusion_t(net=self.net, loss_fn=loss_fn, **diffusion_kwargs)
        self.sampler = sampler_t(net=self.net, **sampler_kwargs)

    def forward(self, *args, **kwargs) -> Tensor:
        return self.diffusion(*args, **kwargs)

    @torch.no_grad()
    def sample(self, *args, **kwargs) -> Tensor:
        return self.sampler(*args, **kwargs)


def build_model():
    return DiffusionModel(
        net_t=TinyUNet,
        in_channels=2,
        channels=[8],
        diffusion_t=VDiffusion,
        sampler_t=VSampler,
    )


def train():
    model = torch.compile(build_model())
    return model


def make():
    torch.manual_seed(0)
    audio = torch.randn(2, 2, 16)
    return build_model(), [(audio,), (torch.randn(1, 2, 32),)]
