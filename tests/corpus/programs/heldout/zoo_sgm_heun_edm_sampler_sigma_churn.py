"""Stability-AI generative-models (sgm) HeunEDMSampler: each step picks `gamma` with the chained tensor comparison `self.s_tmin <= sigmas[i] <= self.s_tmax`, and the Heun correction branches on `torch.sum(next_sigma) < 1e-14`.

Source: Stability-AI/generative-models@0ad7de9a5cb53fd63d6d30a4f385485e72e08597:sgm/modules/diffusionmodules/sampling.py:1-140
Also: sgm/modules/diffusionmodules/discretizer.py (Discretization, EDMDiscretization),
sgm/modules/diffusionmodules/guiders.py (VanillaCFG), sgm/modules/diffusionmodules/denoiser.py
(Denoiser), sgm/modules/diffusionmodules/denoiser_scaling.py (EDMScaling),
sgm/modules/diffusionmodules/sampling_utils.py (to_d), sgm/util.py (append_dims,
append_zero, default), sgm/models/diffusion.py (DiffusionEngine.sample).
Kept: BaseDiffusionSampler (prepare_sampling_loop scaling x in place,
denoise through the guider, get_sigma_gen with its verbose prints),
EDMSampler.__call__/sampler_step with the churn noise, HeunEDMSampler's
correction, CFG's prepare_inputs over the cond dict, the EDM-scaled Denoiser
and DiffusionEngine.sample's denoiser lambda.
Simplified: instantiate_from_config resolves classes in this module; tqdm is
not used (verbose False); the UNet is a 1x1 conv conditioned on a "vector"
embedding; 4 sampling steps on 1x2x2 latents.
"""
from abc import ABC, abstractmethod
from inspect import isfunction
from typing import Dict, Tuple, Union

import torch
import torch.nn as nn


def exists(x):
    return x is not None


def default(val, d):
    if exists(val):
        return val
    return d() if isfunction(d) else d


def append_dims(x, target_dims):
    """Appends dimensions to the end of a tensor until it has target_dims dimensions."""
    dims_to_append = target_dims - x.ndim
    if dims_to_append < 0:
        raise ValueError(
            f"input has {x.ndim} dims but target_dims is {target_dims}, which is less"
        )
    return x[(...,) + (None,) * dims_to_append]


def append_zero(x):
    return torch.cat([x, x.new_zeros([1])])


def instantiate_from_config(config):
    if not "target" in config:
        raise KeyError("Expected key `target` to instantiate.")
    return globals()[config["target"].rsplit(".", 1)[-1]](**config.get("params", dict()))


def to_d(x, sigma, denoised):
    return (x - denoised) / append_dims(sigma, x.ndim)


class Discretization:
    def __call__(self, n, do_append_zero=True, device="cpu", flip=False):
        sigmas = self.get_sigmas(n, device=device)
        sigmas = append_zero(sigmas) if do_append_zero else sigmas
        return sigmas if not flip else torch.flip(sigmas, (0,))

    @abstractmethod
    def get_sigmas(self, n, device):
        pass


class EDMDiscretization(Discretization):
    def __init__(self, sigma_min=0.002, sigma_max=80.0, rho=7.0):
        self.sigma_min = sigma_min
        self.sigma_max = sigma_max
        self.rho = rho

    def get_sigmas(self, n, device="cpu"):
        ramp = torch.linspace(0, 1, n, device=device)
        min_inv_rho = self.sigma_min ** (1 / self.rho)
        max_inv_rho = self.sigma_max ** (1 / self.rho)
        sigmas = (max_inv_rho + ramp * (min_inv_rho - max_inv_rho)) ** self.rho
        return sigmas


class Guider(ABC):
    @abstractmethod
    def __call__(self, x: torch.Tensor, sigma: float) -> torch.Tensor:
        pass

    def prepare_inputs(self, x, s, c, uc):
        pass


class VanillaCFG(Guider):
    def __init__(self, scale: float):
        self.scale = scale

    def __call__(self, x: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
        x_u, x_c = x.chunk(2)
        x_pred = x_u + self.scale * (x_c - x_u)
        return x_pred

    def prepare_inputs(self, x, s, c, uc):
        c_out = dict()

        for k in c:
            if k in ["vector", "crossattn", "concat"]:
                c_out[k] = torch.cat((uc[k], c[k]), 0)
            else:
                assert c[k] == uc[k]
                c_out[k] = c[k]
        return torch.cat([x] * 2), torch.cat([s] * 2), c_out


class BaseDiffusionSampler:
    def __init__(self, discretization_config, num_steps=None, guider_config=None,
                 verbose: bool = False, device: str = "cuda"):
        self.num_steps = num_steps
        self.discretization = instantiate_from_config(discretization_config)
        self.guider = instantiate_from_config(guider_config)
        self.verbose = verbose
        self.device = device

    def prepare_sampling_loop(self, x, cond, uc=None, num_steps=None):
        sigmas = self.discretization(
            self.num_steps if num_steps is None else num_steps, device=self.device
        )
        uc = default(uc, cond)

        x *= torch.sqrt(1.0 + sigmas[0] ** 2.0)
        num_sigmas = len(sigmas)

        s_in = x.new_ones([x.shape[0]])

        return x, s_in, sigmas, num_sigmas, cond, uc

    def denoise(self, x, denoiser, sigma, cond, uc):
        denoised = denoiser(*self.guider.prepare_inputs(x, sigma, cond, uc))
        denoised = self.guider(denoised, sigma)
        return denoised

    def get_sigma_gen(self, num_sigmas):
        sigma_generator = range(num_sigmas - 1)
        if self.verbose:
            print("#" * 30, " Sampling setting ", "#" * 30)
            print(f"Sampler: {self.__class__.__name__}")
            print(f"Discretization: {self.discretization.__class__.__name__}")
            print(f"Guider: {self.guider.__class__.__name__}")
        return sigma_generator


class SingleStepDiffusionSampler(BaseDiffusionSampler):
    def sampler_step(self, sigma, next_sigma, denoiser, x, cond, uc, *args, **kwargs):
        raise NotImplementedError

    def euler_step(self, x, d, dt):
        return x + dt * d


class EDMSampler(SingleStepDiffusionSampler):
    def __init__(
        self, s_churn=0.0, s_tmin=0.0, s_tmax=float("inf"), s_noise=1.0, *args, **kwargs
    ):
        super().__init__(*args, **kwargs)

        self.s_churn = s_churn
        self.s_tmin = s_tmin
        self.s_tmax = s_tmax
        self.s_noise = s_noise

    def sampler_step(self, sigma, next_sigma, denoiser, x, cond, uc=None, gamma=0.0):
        sigma_hat = sigma * (gamma + 1.0)
        if gamma > 0:
            eps = torch.randn_like(x) * self.s_noise
            x = x + eps * append_dims(sigma_hat**2 - sigma**2, x.ndim) ** 0.5

        denoised = self.denoise(x, denoiser, sigma_hat, cond, uc)
        d = to_d(x, sigma_hat, denoised)
        dt = append_dims(next_sigma - sigma_hat, x.ndim)

        euler_step = self.euler_step(x, d, dt)
        x = self.possible_correction_step(
            euler_step, x, d, dt, next_sigma, denoiser, cond, uc
        )
        return x

    def __call__(self, denoiser, x, cond, uc=None, num_steps=None):
        x, s_in, sigmas, num_sigmas, cond, uc = self.prepare_sampling_loop(
            x, cond, uc, num_steps
        )

        for i in self.get_sigma_gen(num_sigmas):
            gamma = (
                min(self.s_churn / (num_sigmas - 1), 2**0.5 - 1)
                if self.s_tmin <= sigmas[i] <= self.s_tmax
                else 0.0
            )
            x = self.sampler_step(
                s_in * sigmas[i],
                s_in * sigmas[i + 1],
                denoiser,
                x,
                cond,
                uc,
                gamma,
            )

        return x


class HeunEDMSampler(EDMSampler):
    def possible_correction_step(
        self, euler_step, x, d, dt, next_sigma, denoiser, cond, uc
    ):
        if torch.sum(next_sigma) < 1e-14:
            # Save a network evaluation if all noise levels are 0
            return euler_step
        else:
            denoised = self.denoise(euler_step, denoiser, next_sigma, cond, uc)
            d_new = to_d(euler_step, next_sigma, denoised)
            d_prime = (d + d_new) / 2.0

            # apply correction if noise level is not 0
            x = torch.where(
                append_dims(next_sigma, x.ndim) > 0.0, x + d_prime * dt, euler_step
            )
            return x


class EDMScaling:
    def __init__(self, sigma_data: float = 0.5):
        self.sigma_data = sigma_data

    def __call__(
        self, sigma: torch.Tensor
    ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        c_skip = self.sigma_data**2 / (sigma**2 + self.sigma_data**2)
        c_out = sigma * self.sigma_data / (sigma**2 + self.sigma_data**2) ** 0.5
        c_in = 1 / (sigma**2 + self.sigma_data**2) ** 0.5
        c_noise = 0.25 * sigma.log()
        return c_skip, c_out, c_in, c_noise


class Denoiser(nn.Module):
    def __init__(self, scaling_config: Dict):
        super().__init__()

        self.scaling = instantiate_from_config(scaling_config)

    def possibly_quantize_sigma(self, sigma: torch.Tensor) -> torch.Tensor:
        return sigma

    def possibly_quantize_c_noise(self, c_noise: torch.Tensor) -> torch.Tensor:
        return c_noise

    def forward(self, network, input, sigma, cond, **additional_model_inputs):
        sigma = self.possibly_quantize_sigma(sigma)
        sigma_shape = sigma.shape
        sigma = append_dims(sigma, input.ndim)
        c_skip, c_out, c_in, c_noise = self.scaling(sigma)
        c_noise = self.possibly_quantize_c_noise(c_noise.reshape(sigma_shape))
        return (
            network(input * c_in, c_noise, cond, **additional_model_inputs) * c_out
            + input * c_skip
        )


class TinyUNet(nn.Module):
    def __init__(self, channels=1, adm_in_channels=2):
        super().__init__()
        self.proj = nn.Conv2d(channels, channels, 1)
        self.label_emb = nn.Linear(adm_in_channels, channels)
        self.time_embed = nn.Linear(1, channels)

    def forward(self, x, timesteps, c):
        emb = self.time_embed(timesteps[:, None]) + self.label_emb(c["vector"])
        return self.proj(x) + emb[:, :, None, None]


class DiffusionEngine(nn.Module):
    def __init__(self, sampler_config, denoiser_config):
        super().__init__()
        self.model = TinyUNet()
        self.denoiser = Denoiser(**denoiser_config)
        self.sampler = HeunEDMSampler(**sampler_config)
        self.device = "cpu"

    @torch.no_grad()
    def sample(self, cond: Dict, uc: Union[Dict, None] = None, batch_size: int = 16,
               shape=None, **kwargs):
        randn = torch.randn(batch_size, *shape).to(self.device)

        denoiser = lambda input, sigma, c: self.denoiser(
            self.model, input, sigma, c, **kwargs
        )
        samples = self.sampler(denoiser, randn, cond, uc=uc)
        return samples


SAMPLER_CONFIG = {
    "num_steps": 4,
    "s_churn": 1.0,
    "s_tmin": 0.5,
    "s_tmax": 20.0,
    "device": "cpu",
    "discretization_config": {"target": "sgm.modules.diffusionmodules.discretizer.EDMDiscretization"},
    "guider_config": {"target": "sgm.modules.diffusionmodules.guiders.VanillaCFG", "params": {"scale": 3.0}},
}
DENOISER_CONFIG = {"scaling_config": {"target": "sgm.modules.diffusionmodules.denoiser_scaling.EDMScaling"}}


def build_engine():
    return DiffusionEngine(SAMPLER_CONFIG, DENOISER_CONFIG)


engine = build_engine()
engine.sample = torch.compile(engine.sample)


def make():
    torch.manual_seed(0)
    model = build_engine()
    c = {"vector": torch.randn(2, 2)}
    uc = {"vector": torch.zeros(2, 2)}
    return model.sample, [(c, uc, 2, (1, 2, 2)), (c, None, 2, (1, 2, 2))]
