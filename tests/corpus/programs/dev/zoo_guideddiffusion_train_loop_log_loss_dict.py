"""guided-diffusion's TrainLoop.forward_backward: the UniformSampler draws timesteps with `np.random.choice`, `log_loss_dict` logs `values.mean().item()` and walks `ts.cpu().numpy()` per quartile, and the loss goes through `loss.backward()`.

Source: openai/guided-diffusion@22e0df8183507e13a7813f8d38d51b072ca1e67c:guided_diffusion/train_util.py:160-200,291-301
Also: guided_diffusion/resample.py:1-60 (ScheduleSampler.sample, UniformSampler,
LossAwareSampler), guided_diffusion/gaussian_diffusion.py:18-45,65-200,744-818,895-912
(beta schedule, enums, GaussianDiffusion.__init__/q_sample/training_losses for MSE,
_extract_into_tensor), guided_diffusion/logger.py (Logger.logkv_mean, get_current),
guided_diffusion/nn.py (mean_flat, timestep_embedding), guided_diffusion/fp16_util.py
(zero_grad, MixedPrecisionTrainer.backward without fp16).
Kept: the microbatch loop, the functools.partial around training_losses, the
`last_batch or not self.use_ddp` branch, the isinstance(LossAwareSampler)
check, log_loss_dict's quartile loop, the numpy schedule arrays indexed by
`th.from_numpy(arr)[timesteps]`.
Simplified: the UNet is a two-layer conv net with a timestep embedding; no
DDP (use_ddp False, dist_util.dev() is the CPU), no EMA/optimizer step; the
logger has no output formats; 100 diffusion steps, 2x2 images.
"""
import enum
import functools
import math
from abc import ABC, abstractmethod
from collections import defaultdict

import numpy as np
import torch as th
import torch.nn as nn


# ---- logger.py ----
class Logger(object):
    DEFAULT = None
    CURRENT = None

    def __init__(self, dir, output_formats, comm=None):
        self.name2val = defaultdict(float)  # values this iteration
        self.name2cnt = defaultdict(int)
        self.dir = dir
        self.output_formats = output_formats
        self.comm = comm

    def logkv_mean(self, key, val):
        oldval, cnt = self.name2val[key], self.name2cnt[key]
        self.name2val[key] = oldval * cnt / (cnt + 1) + val / (cnt + 1)
        self.name2cnt[key] = cnt + 1


def get_current():
    if Logger.CURRENT is None:
        Logger.CURRENT = Logger(dir=None, output_formats=[])
    return Logger.CURRENT


def logkv_mean(key, val):
    get_current().logkv_mean(key, val)


# ---- nn.py ----
def mean_flat(tensor):
    return tensor.mean(dim=list(range(1, len(tensor.shape))))


def timestep_embedding(timesteps, dim, max_period=10000):
    half = dim // 2
    freqs = th.exp(
        -math.log(max_period) * th.arange(start=0, end=half, dtype=th.float32) / half
    ).to(device=timesteps.device)
    args = timesteps[:, None].float() * freqs[None]
    embedding = th.cat([th.cos(args), th.sin(args)], dim=-1)
    if dim % 2:
        embedding = th.cat([embedding, th.zeros_like(embedding[:, :1])], dim=-1)
    return embedding


# ---- gaussian_diffusion.py ----
def get_named_beta_schedule(schedule_name, num_diffusion_timesteps):
    if schedule_name == "linear":
        scale = 1000 / num_diffusion_timesteps
        beta_start = scale * 0.0001
        beta_end = scale * 0.02
        return np.linspace(
            beta_start, beta_end, num_diffusion_timesteps, dtype=np.float64
        )
    else:
        raise NotImplementedError(f"unknown beta schedule: {schedule_name}")


class ModelMeanType(enum.Enum):
    PREVIOUS_X = enum.auto()  # the model predicts x_{t-1}
    START_X = enum.auto()  # the model predicts x_0
    EPSILON = enum.auto()  # the model predicts epsilon


class ModelVarType(enum.Enum):
    LEARNED = enum.auto()
    FIXED_SMALL = enum.auto()
    FIXED_LARGE = enum.auto()
    LEARNED_RANGE = enum.auto()


class LossType(enum.Enum):
    MSE = enum.auto()  # use raw MSE loss (and KL when learning variances)
    RESCALED_MSE = enum.auto()
    KL = enum.auto()  # use the variational lower-bound
    RESCALED_KL = enum.auto()  # like KL, but rescale to estimate the full VLB


def _extract_into_tensor(arr, timesteps, broadcast_shape):
    res = th.from_numpy(arr).to(device=timesteps.device)[timesteps].float()
    while len(res.shape) < len(broadcast_shape):
        res = res[..., None]
    return res.expand(broadcast_shape)


class GaussianDiffusion:
    def __init__(self, *, betas, model_mean_type, model_var_type, loss_type,
                 rescale_timesteps=False):
        self.model_mean_type = model_mean_type
        self.model_var_type = model_var_type
        self.loss_type = loss_type
        self.rescale_timesteps = rescale_timesteps

        # Use float64 for accuracy.
        betas = np.array(betas, dtype=np.float64)
        self.betas = betas
        assert len(betas.shape) == 1, "betas must be 1-D"
        assert (betas > 0).all() and (betas <= 1).all()

        self.num_timesteps = int(betas.shape[0])

        alphas = 1.0 - betas
        self.alphas_cumprod = np.cumprod(alphas, axis=0)
        self.alphas_cumprod_prev = np.append(1.0, self.alphas_cumprod[:-1])
        assert self.alphas_cumprod_prev.shape == (self.num_timesteps,)

        # calculations for diffusion q(x_t | x_{t-1}) and others
        self.sqrt_alphas_cumprod = np.sqrt(self.alphas_cumprod)
        self.sqrt_one_minus_alphas_cumprod = np.sqrt(1.0 - self.alphas_cumprod)

    def q_sample(self, x_start, t, noise=None):
        if noise is None:
            noise = th.randn_like(x_start)
        assert noise.shape == x_start.shape
        return (
            _extract_into_tensor(self.sqrt_alphas_cumprod, t, x_start.shape) * x_start
            + _extract_into_tensor(self.sqrt_one_minus_alphas_cumprod, t, x_start.shape)
            * noise
        )

    def _scale_timesteps(self, t):
        if self.rescale_timesteps:
            return t.float() * (1000.0 / self.num_timesteps)
        return t

    def training_losses(self, model, x_start, t, model_kwargs=None, noise=None):
        if model_kwargs is None:
            model_kwargs = {}
        if noise is None:
            noise = th.randn_like(x_start)
        x_t = self.q_sample(x_start, t, noise=noise)

        terms = {}

        if self.loss_type == LossType.MSE or self.loss_type == LossType.RESCALED_MSE:
            model_output = model(x_t, self._scale_timesteps(t), **model_kwargs)

            target = {
                ModelMeanType.START_X: x_start,
                ModelMeanType.EPSILON: noise,
            }[self.model_mean_type]
            assert model_output.shape == target.shape == x_start.shape
            terms["mse"] = mean_flat((target - model_output) ** 2)
            if "vb" in terms:
                terms["loss"] = terms["mse"] + terms["vb"]
            else:
                terms["loss"] = terms["mse"]
        else:
            raise NotImplementedError(self.loss_type)

        return terms


# ---- resample.py ----
class ScheduleSampler(ABC):
    @abstractmethod
    def weights(self):
        """Get a numpy array of weights, one per diffusion step."""

    def sample(self, batch_size, device):
        w = self.weights()
        p = w / np.sum(w)
        indices_np = np.random.choice(len(p), size=(batch_size,), p=p)
        indices = th.from_numpy(indices_np).long().to(device)
        weights_np = 1 / (len(p) * p[indices_np])
        weights = th.from_numpy(weights_np).float().to(device)
        return indices, weights


class UniformSampler(ScheduleSampler):
    def __init__(self, diffusion):
        self.diffusion = diffusion
        self._weights = np.ones([diffusion.num_timesteps])

    def weights(self):
        return self._weights


class LossAwareSampler(ScheduleSampler):
    @abstractmethod
    def update_with_all_losses(self, ts, losses):
        """Update the reweighting using losses from a model."""


# ---- fp16_util.py ----
def zero_grad(model_params):
    for param in model_params:
        # Taken from https://pytorch.org/docs/stable/_modules/torch/optim/optimizer.html#Optimizer.add_param_group
        if param.grad is not None:
            param.grad.detach_()
            param.grad.zero_()


class MixedPrecisionTrainer:
    def __init__(self, *, model, use_fp16=False, initial_lg_loss_scale=20.0):
        self.model = model
        self.use_fp16 = use_fp16
        self.model_params = list(self.model.parameters())
        self.lg_loss_scale = initial_lg_loss_scale

    def zero_grad(self):
        zero_grad(self.model_params)

    def backward(self, loss: th.Tensor):
        if self.use_fp16:
            loss_scale = 2 ** self.lg_loss_scale
            (loss * loss_scale).backward()
        else:
            loss.backward()


# ---- the model (stand-in for the UNet) ----
class TinyEpsModel(nn.Module):
    def __init__(self, channels=3, model_channels=4):
        super().__init__()
        self.model_channels = model_channels
        self.time_embed = nn.Linear(model_channels, model_channels)
        self.inp = nn.Conv2d(channels, model_channels, 3, padding=1)
        self.out = nn.Conv2d(model_channels, channels, 3, padding=1)

    def forward(self, x, timesteps, y=None):
        emb = self.time_embed(timestep_embedding(timesteps, self.model_channels))
        h = self.inp(x) + emb[:, :, None, None]
        return self.out(th.nn.functional.silu(h))


# ---- train_util.py ----
def log_loss_dict(diffusion, ts, losses):
    for key, values in losses.items():
        logkv_mean(key, values.mean().item())
        # Log the quantiles (four quartiles, in particular).
        for sub_t, sub_loss in zip(ts.cpu().numpy(), values.detach().cpu().numpy()):
            quartile = int(4 * sub_t / diffusion.num_timesteps)
            logkv_mean(f"{key}_q{quartile}", sub_loss)


class TrainLoop:
    def __init__(self, *, model, diffusion, microbatch, schedule_sampler=None, use_fp16=False):
        self.model = model
        self.diffusion = diffusion
        self.microbatch = microbatch
        self.schedule_sampler = schedule_sampler or UniformSampler(diffusion)
        self.mp_trainer = MixedPrecisionTrainer(model=self.model, use_fp16=use_fp16)
        self.use_ddp = False
        self.ddp_model = self.model

    def forward_backward(self, batch, cond):
        self.mp_trainer.zero_grad()
        for i in range(0, batch.shape[0], self.microbatch):
            micro = batch[i : i + self.microbatch]
            micro_cond = {
                k: v[i : i + self.microbatch]
                for k, v in cond.items()
            }
            last_batch = (i + self.microbatch) >= batch.shape[0]
            t, weights = self.schedule_sampler.sample(micro.shape[0], batch.device)

            compute_losses = functools.partial(
                self.diffusion.training_losses,
                self.ddp_model,
                micro,
                t,
                model_kwargs=micro_cond,
            )

            if last_batch or not self.use_ddp:
                losses = compute_losses()
            else:
                with self.ddp_model.no_sync():
                    losses = compute_losses()

            if isinstance(self.schedule_sampler, LossAwareSampler):
                self.schedule_sampler.update_with_local_losses(
                    t, losses["loss"].detach()
                )

            loss = (losses["loss"] * weights).mean()
            log_loss_dict(
                self.diffusion, t, {k: v * weights for k, v in losses.items()}
            )
            self.mp_trainer.backward(loss)


def create_train_loop(microbatch=2):
    diffusion = GaussianDiffusion(
        betas=get_named_beta_schedule("linear", 100),
        model_mean_type=ModelMeanType.EPSILON,
        model_var_type=ModelVarType.FIXED_LARGE,
        loss_type=LossType.MSE,
    )
    return TrainLoop(model=TinyEpsModel(), diffusion=diffusion, microbatch=microbatch)


def main():
    loop = create_train_loop()
    step = th.compile(loop.forward_backward)
    step(th.randn(4, 3, 2, 2), {})


def make():
    th.manual_seed(0)
    loop = create_train_loop(microbatch=2)
    batch = th.randn(4, 3, 2, 2)
    return loop.forward_backward, [(batch, {}), (batch[:2], {"y": th.tensor([0, 1])})]
