"""mbrl-lib CEMOptimizer.optimize: truncated_normal_ resamples in a `while` on `torch.sum(cond)`, NaN values are masked, and the best elite is kept by comparing a tensor with a float.

Source: facebookresearch/mbrl-lib@07188c94019610e66620ddf41b07becc7f56461c:mbrl/planning/trajectory_opt.py:42-146
Also: mbrl/util/math.py:65-90 (truncated_normal_, at 08281cc3dd66b69d547d52cd6db1675002412e49).
Kept: the Optimizer base class, CEMOptimizer.__init__ (np.ceil elite_num,
initial_var from the bounds), optimize's loop with the callback hook, the
NaN filter `values[values.isnan()] = -1e-10`, topk elites, the momentum
update and `if best_values[0] > best_value`; truncated_normal_ as written.
Simplified: the objective is a small quadratic (the real one rolls out a
dynamics model); horizon 4 x 2 actions, population 32, 2 iterations.
"""
from typing import Callable, Optional, Sequence

import numpy as np
import torch


def truncated_normal_(tensor: torch.Tensor, mean: float = 0, std: float = 1):
    """Samples from a truncated normal distribution in-place."""
    torch.nn.init.normal_(tensor, mean=mean, std=std)
    while True:
        cond = torch.logical_or(tensor < mean - 2 * std, tensor > mean + 2 * std)
        if not torch.sum(cond):
            break
        tensor = torch.where(
            cond,
            torch.nn.init.normal_(
                torch.ones(tensor.shape, device=tensor.device), mean=mean, std=std
            ),
            tensor,
        )
    return tensor


class Optimizer:
    def __init__(self):
        pass

    def optimize(
        self,
        obj_fun: Callable[[torch.Tensor], torch.Tensor],
        x0: Optional[torch.Tensor] = None,
        **kwargs,
    ) -> torch.Tensor:
        pass


class CEMOptimizer(Optimizer):
    def __init__(
        self,
        num_iterations: int,
        elite_ratio: float,
        population_size: int,
        lower_bound: Sequence[float],
        upper_bound: Sequence[float],
        alpha: float,
        device: torch.device,
        return_mean_elites: bool = False,
    ):
        super().__init__()
        self.num_iterations = num_iterations
        self.elite_ratio = elite_ratio
        self.population_size = population_size
        self.elite_num = int(np.ceil(self.population_size * self.elite_ratio).astype(
            np.int32
        ))
        self.lower_bound = torch.tensor(lower_bound, device=device, dtype=torch.float32)
        self.upper_bound = torch.tensor(upper_bound, device=device, dtype=torch.float32)
        self.initial_var = ((self.upper_bound - self.lower_bound) ** 2) / 16
        self.alpha = alpha
        self.return_mean_elites = return_mean_elites
        self.device = device

    def optimize(
        self,
        obj_fun: Callable[[torch.Tensor], torch.Tensor],
        x0: Optional[torch.Tensor] = None,
        callback: Optional[Callable[[torch.Tensor, torch.Tensor, int], None]] = None,
        **kwargs,
    ) -> torch.Tensor:
        mu = x0.clone()
        var = self.initial_var.clone()

        best_solution = torch.empty_like(mu)
        best_value = -np.inf
        population = torch.zeros((self.population_size,) + x0.shape).to(
            device=self.device
        )
        for i in range(self.num_iterations):
            lb_dist = mu - self.lower_bound
            ub_dist = self.upper_bound - mu
            mv = torch.min(torch.square(lb_dist / 2), torch.square(ub_dist / 2))
            constrained_var = torch.min(mv, var)

            population = truncated_normal_(population)
            population = population * torch.sqrt(constrained_var) + mu

            values = obj_fun(population)

            if callback is not None:
                callback(population, values, i)

            # filter out NaN values
            values[values.isnan()] = -1e-10
            best_values, elite_idx = values.topk(self.elite_num)
            elite = population[elite_idx]

            new_mu = torch.mean(elite, dim=0)
            new_var = torch.var(elite, unbiased=False, dim=0)
            mu = self.alpha * mu + (1 - self.alpha) * new_mu
            var = self.alpha * var + (1 - self.alpha) * new_var

            if best_values[0] > best_value:
                best_value = best_values[0]
                best_solution = population[elite_idx[0]].clone()

        return mu if self.return_mean_elites else best_solution


def trajectory_reward(action_sequences: torch.Tensor) -> torch.Tensor:
    """Stand-in objective: reward close to a target action sequence."""
    target = torch.linspace(-0.5, 0.5, action_sequences.shape[1]).unsqueeze(-1)
    return -((action_sequences - target) ** 2).sum(dim=(1, 2))


def build_optimizer(return_mean_elites: bool = False) -> CEMOptimizer:
    horizon, action_dim = 4, 2
    return CEMOptimizer(
        num_iterations=2,
        elite_ratio=0.1,
        population_size=32,
        lower_bound=[[-1.0] * action_dim] * horizon,
        upper_bound=[[1.0] * action_dim] * horizon,
        alpha=0.1,
        device=torch.device("cpu"),
        return_mean_elites=return_mean_elites,
    )


optimize = torch.compile(build_optimizer().optimize)


def make():
    torch.manual_seed(0)
    x0 = torch.zeros(4, 2)
    return build_optimizer().optimize, [(trajectory_reward, x0), (trajectory_reward, x0 + 0.25)]
