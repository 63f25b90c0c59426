"""flow_matching MixtureDiscreteEulerSolver.sample: `.item()` time grid, `mask_jump.sum() > 0`, boolean-mask resampling, `t in time_grid`.

Source: facebookresearch/flow_matching@68f0f96d23:flow_matching/solver/discrete_solver.py:24-220
Kept: __init__'s source_distribution_p check, the toggle_grad decorator
(solver/utils.py, set_grad_enabled), sample() verbatim: step_size None vs float
(time_grid[0].item(), ceil, torch.tensor of a Python list), return_intermediates
with get_nearest_times/argsort, the nullcontext/tqdm ctx, the Euler loop with
categorical sampling, the final-step branch, the divergence-free term, the
one_hot/where zeroing, `mask_jump.sum() > 0` and `x_t[mask_jump] = ...`.
PolynomialConvexScheduler and categorical() from the same library.
Simplified: tqdm is a local stand-in (verbose stays False); the model is an
embedding + linear + softmax over a vocabulary of 5; 3 positions.
"""
from contextlib import nullcontext
from dataclasses import dataclass
from functools import wraps
from math import ceil
from typing import Callable, Optional, Union

import torch
from torch import Tensor, nn
from torch.nn import functional as F


class tqdm:
    def __init__(self, total=None, desc=""):
        self.total = total
        self.n = 0
        self.desc = desc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def refresh(self):
        pass

    def set_description(self, desc):
        self.desc = desc


def get_nearest_times(time_grid: Tensor, t_discretization: Tensor) -> Tensor:
    distances = torch.cdist(
        time_grid.unsqueeze(1),
        t_discretization.unsqueeze(1),
        compute_mode="donot_use_mm_for_euclid_dist",
    )
    nearest_indices = distances.argmin(dim=1)

    return t_discretization[nearest_indices]


def toggle_grad(func):
    @wraps(func)
    def wrapper(*args, enable_grad=False, **kwargs):
        with torch.set_grad_enabled(enable_grad):
            return func(*args, **kwargs)

    return wrapper


def categorical(probs: Tensor) -> Tensor:
    return torch.multinomial(probs.flatten(0, -2), 1, replacement=True).view(probs.shape[:-1])


@dataclass
class SchedulerOutput:
    alpha_t: Tensor
    sigma_t: Tensor
    d_alpha_t: Tensor
    d_sigma_t: Tensor


class PolynomialConvexScheduler:
    def __init__(self, n: Union[float, int]) -> None:
        assert isinstance(n, (float, int)), f"`n` must be a float or int. Got {type(n)=}."
        assert n > 0, f"`n` must be positive. Got {n=}."
        self.n = n

    def __call__(self, t: Tensor) -> SchedulerOutput:
        return SchedulerOutput(
            alpha_t=t**self.n,
            sigma_t=1 - t**self.n,
            d_alpha_t=self.n * (t ** (self.n - 1)),
            d_sigma_t=-self.n * (t ** (self.n - 1)),
        )


class MixtureDiscreteProbPath:
    def __init__(self, scheduler):
        self.scheduler = scheduler


class ModelWrapper(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x: Tensor, t: Tensor, **extras) -> Tensor:
        return torch.softmax(self.model(x, t), dim=-1)


class Denoiser(nn.Module):
    def __init__(self, vocab=5, hidden=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.time = nn.Linear(1, hidden)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x, t):
        h = self.emb(x) + self.time(t[:, None].float())[:, None, :]
        return self.out(torch.tanh(h))


class Solver(nn.Module):
    pass


class MixtureDiscreteEulerSolver(Solver):
    def __init__(
        self,
        model: ModelWrapper,
        path: MixtureDiscreteProbPath,
        vocabulary_size: int,
        source_distribution_p: Optional[Tensor] = None,
    ):
        super().__init__()
        self.model = model
        self.path = path
        self.vocabulary_size = vocabulary_size

        if source_distribution_p is not None:
            assert source_distribution_p.shape == torch.Size(
                [vocabulary_size]
            ), f"Source distribution p dimension must match the vocabulary size {vocabulary_size}. Got {source_distribution_p.shape}."

        self.source_distribution_p = source_distribution_p

    @toggle_grad
    def sample(
        self,
        x_init: Tensor,
        step_size: Optional[float],
        div_free: Union[float, Callable[[float], float]] = 0.0,
        dtype_categorical: torch.dtype = torch.float32,
        time_grid: Tensor = torch.tensor([0.0, 1.0]),
        return_intermediates: bool = False,
        verbose: bool = False,
        **model_extras,
    ) -> Tensor:
        if not div_free == 0.0:
            assert (
                self.source_distribution_p is not None
            ), "Source distribution p must be specified in order to add a divergence-free term to the probability velocity."

        time_grid = time_grid.to(device=x_init.device)

        if step_size is None:
            t_discretization = time_grid
            n_steps = len(time_grid) - 1
        else:
            t_init = time_grid[0].item()
            t_final = time_grid[-1].item()
            assert (
                t_final - t_init
            ) > step_size, f"Time interval [time_grid[0], time_grid[-1]] must be larger than step_size. Got a time interval [{t_init}, {t_final}] and step_size {step_size}."

            n_steps = ceil((t_final - t_init) / step_size)
            t_discretization = torch.tensor(
                [t_init + step_size * i for i in range(n_steps)] + [t_final],
                device=x_init.device,
            )

            if return_intermediates:
                order = torch.argsort(time_grid)
                time_grid = get_nearest_times(
                    time_grid=time_grid, t_discretization=t_discretization
                )

        x_t = x_init.clone()
        steps_counter = 0
        res = []

        if return_intermediates:
            res = [x_init.clone()]

        if verbose:
            ctx = tqdm(total=t_final, desc=f"NFE: {steps_counter}")
        else:
            ctx = nullcontext()

        with ctx:
            for i in range(n_steps):
                t = t_discretization[i : i + 1]
                h = t_discretization[i + 1 : i + 2] - t_discretization[i : i + 1]

                p_1t = self.model(x=x_t, t=t.repeat(x_t.shape[0]), **model_extras)
                x_1 = categorical(p_1t.to(dtype=dtype_categorical))

                if i == n_steps - 1:
                    x_t = x_1
                else:
                    scheduler_output = self.path.scheduler(t=t)

                    k_t = scheduler_output.alpha_t
                    d_k_t = scheduler_output.d_alpha_t

                    delta_1 = F.one_hot(x_1, num_classes=self.vocabulary_size).to(
                        k_t.dtype
                    )
                    u = d_k_t / (1 - k_t) * delta_1

                    div_free_t = div_free(t) if callable(div_free) else div_free

                    if div_free_t > 0:
                        p_0 = self.source_distribution_p[(None,) * x_t.dim()]
                        u = u + div_free_t * d_k_t / (k_t * (1 - k_t)) * (
                            (1 - k_t) * p_0 + k_t * delta_1
                        )

                    delta_t = F.one_hot(x_t, num_classes=self.vocabulary_size)
                    u = torch.where(
                        delta_t.to(dtype=torch.bool), torch.zeros_like(u), u
                    )

                    intensity = u.sum(dim=-1)
                    mask_jump = torch.rand(
                        size=x_t.shape, device=x_t.device
                    ) < 1 - torch.exp(-h * intensity)

                    if mask_jump.sum() > 0:
                        x_t[mask_jump] = categorical(
                            u[mask_jump].to(dtype=dtype_categorical)
                        )

                steps_counter += 1
                t = t + h

                if return_intermediates and (t in time_grid):
                    res.append(x_t.clone())

                if verbose:
                    ctx.n = t.item()
                    ctx.refresh()
                    ctx.set_description(f"NFE: {steps_counter}")

        if return_intermediates:
            if step_size is None:
                return torch.stack(res, dim=0)
            else:
                return torch.stack(res, dim=0)[order]
        else:
            return x_t


def build_solver():
    vocab = 5
    path = MixtureDiscreteProbPath(scheduler=PolynomialConvexScheduler(n=1.0))
    model = ModelWrapper(Denoiser(vocab))
    return MixtureDiscreteEulerSolver(
        model=model, path=path, vocabulary_size=vocab,
        source_distribution_p=torch.full((vocab,), 1.0 / vocab),
    )


def main():
    solver = build_solver()
    sample = torch.compile(solver.sample)
    return sample


def make():
    torch.manual_seed(0)
    solver = build_solver()
    x_init = torch.randint(0, 5, (2, 3))
    grid = torch.tensor([0.0, 0.5, 0.99])
    return solver.sample, [
        (x_init, 0.34),
        (x_init, None, 0.5, torch.float32, torch.tensor([0.1, 0.4, 0.7, 0.99]), True),
        (x_init, 0.25, 0.0, torch.float32, grid, True),
    ]
