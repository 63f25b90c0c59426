"""BoTorch prune_inferior_points_multi_objective: `if infeas.any()` then boolean-mask assignment, is_non_dominated over posterior samples, `probs.nonzero()`, a branch on the count of kept indices, `.long().unique()` and `X[idcs]`.

Source: pytorch/botorch@e390e135c5327f832275d69ac485d7844e68e234:botorch/acquisition/multi_objective/utils.py:66-131
Also: botorch/acquisition/utils.py:247-314 (_prune_inferior_shared_processing),
botorch/utils/objective.py:101-131 (compute_feasibility_indicator),
botorch/utils/multi_objective/pareto.py:16-65 (is_non_dominated, vectorized path).
Kept: prune_inferior_points_multi_objective verbatim; the shared processing's
validation chain (ndim, empty X, max_frac), math.ceil max_points, the no_grad
posterior call, obj_vals/marginalize handling and the infeasibility indicator;
is_non_dominated with its NaN and dedup handling and the loop-dispatch condition.
Simplified: the GP model is a small module whose posterior holds a mean and a
variance from two linear heads; get_sampler/IIDNormalSampler become
`mean + std * randn(sample_shape + mean.shape)`; is_ensemble is False; no
objective; 6 candidate points in 2-D, 2 objectives, 16 samples.
"""
from __future__ import annotations

import math
from typing import Callable

import torch
from torch import Tensor, nn

# maximum tensor size for simple pareto computation
MAX_BYTES = 5e6


class UnsupportedError(Exception):
    pass


def is_non_dominated(
    Y: Tensor,
    maximize: bool = True,
    deduplicate: bool = True,
) -> Tensor:
    n = Y.shape[-2]
    if n == 0:
        return torch.zeros(Y.shape[:-1], dtype=torch.bool, device=Y.device)
    el_size = 64 if Y.dtype == torch.double else 32
    if n > 1000 or n**2 * Y.shape[:-2].numel() * el_size / 8 > MAX_BYTES:
        raise NotImplementedError("the loop-based path is not part of this program")

    is_all_nan = Y.isnan().all(dim=-1)  # edge case: all elements are NaN
    Y1 = Y.unsqueeze(-3)
    Y2 = Y.unsqueeze(-2)
    if maximize:
        dominates = (Y1 >= Y2).all(dim=-1) & (Y1 > Y2).any(dim=-1)
    else:
        dominates = (Y1 <= Y2).all(dim=-1) & (Y1 < Y2).any(dim=-1)
    nd_mask = ~(dominates.any(dim=-1)) & ~is_all_nan
    if deduplicate:
        # remove duplicates
        # find index of first occurrence  of each unique element
        indices = (Y1 == Y2).all(dim=-1).long().argmax(dim=-1)
        keep = torch.zeros_like(nd_mask)
        keep.scatter_(dim=-1, index=indices, value=1.0)
        return nd_mask & keep
    return nd_mask


def compute_feasibility_indicator(
    constraints: list[Callable[[Tensor], Tensor]] | None,
    samples: Tensor,
    marginalize_dim: int | None = None,
) -> Tensor:
    ind = torch.ones(samples.shape[:-1], dtype=torch.bool, device=samples.device)
    if constraints is not None:
        for constraint in constraints:
            ind = ind.logical_and(constraint(samples) <= 0)
    if ind.ndim >= 3 and marginalize_dim is not None:
        ind = ind.float().mean(dim=marginalize_dim).round().bool()
    return ind


class Posterior:
    def __init__(self, mean: Tensor, variance: Tensor) -> None:
        self.mean = mean
        self.variance = variance


class IIDNormalSampler:
    def __init__(self, sample_shape: torch.Size) -> None:
        self.sample_shape = sample_shape

    def __call__(self, posterior: Posterior) -> Tensor:
        base_samples = torch.randn(self.sample_shape + posterior.mean.shape, dtype=posterior.mean.dtype)
        return posterior.mean + posterior.variance.sqrt() * base_samples


def get_sampler(posterior: Posterior, sample_shape: torch.Size) -> IIDNormalSampler:
    return IIDNormalSampler(sample_shape=sample_shape)


class TwoOutputModel(nn.Module):
    def __init__(self, d: int = 2, m: int = 2) -> None:
        super().__init__()
        self.mean_head = nn.Linear(d, m)
        self.var_head = nn.Linear(d, m)

    def posterior(self, X: Tensor, posterior_transform=None) -> Posterior:
        return Posterior(self.mean_head(X), nn.functional.softplus(self.var_head(X)) * 0.1)


def is_ensemble(model) -> bool:
    return getattr(model, "_is_ensemble", False)


def _prune_inferior_shared_processing(
    model,
    X: Tensor,
    is_moo: bool,
    objective=None,
    posterior_transform=None,
    constraints: list[Callable[[Tensor], Tensor]] | None = None,
    num_samples: int = 2048,
    max_frac: float = 1.0,
    sampler=None,
    marginalize_dim: int | None = None,
) -> tuple[int, Tensor, Tensor]:
    func_name = (
        "prune_inferior_points_multi_objective" if is_moo else "prune_inferior_points"
    )
    if marginalize_dim is None and is_ensemble(model):
        marginalize_dim = -3

    if X.ndim > 2:
        raise UnsupportedError(
            f"Batched inputs `X` are currently unsupported by `{func_name}`"
        )
    if X.size(-2) == 0:
        raise ValueError("X must have at least one point.")
    if max_frac <= 0 or max_frac > 1.0:
        raise ValueError(f"max_frac must take values in (0, 1], is {max_frac}")
    max_points = math.ceil(max_frac * X.size(-2))
    with torch.no_grad():
        posterior = model.posterior(X=X, posterior_transform=posterior_transform)
    if sampler is None:
        sampler = get_sampler(
            posterior=posterior, sample_shape=torch.Size([num_samples])
        )
    samples = sampler(posterior)
    if objective is not None:
        obj_vals = objective(samples=samples, X=X)
    elif is_moo:
        obj_vals = samples
    else:
        obj_vals = samples.squeeze(-1)
    if obj_vals.ndim > (2 + is_moo):
        if obj_vals.ndim == (3 + is_moo) and marginalize_dim is not None:
            obj_vals = obj_vals.mean(dim=marginalize_dim)
        else:
            raise UnsupportedError(
                "Models with multiple batch dims are currently unsupported by "
                f"`{func_name}`."
            )
    infeas = ~compute_feasibility_indicator(
        constraints=constraints,
        samples=samples,
        marginalize_dim=marginalize_dim,
    )
    return max_points, obj_vals, infeas


def prune_inferior_points_multi_objective(
    model,
    X: Tensor,
    ref_point: Tensor,
    objective=None,
    constraints: list[Callable[[Tensor], Tensor]] | None = None,
    num_samples: int = 2048,
    max_frac: float = 1.0,
    marginalize_dim: int | None = None,
) -> Tensor:
    max_points, obj_vals, infeas = _prune_inferior_shared_processing(
        model=model,
        X=X,
        is_moo=True,
        objective=objective,
        constraints=constraints,
        num_samples=num_samples,
        max_frac=max_frac,
        marginalize_dim=marginalize_dim,
    )
    if infeas.any():
        obj_vals[infeas] = ref_point
    pareto_mask = is_non_dominated(obj_vals, deduplicate=False) & (
        obj_vals > ref_point
    ).all(dim=-1)
    probs = pareto_mask.to(dtype=X.dtype).mean(dim=0)
    idcs = probs.nonzero().view(-1)
    if idcs.shape[0] > max_points:
        counts, order_idcs = torch.sort(probs, stable=True, descending=True)
        idcs = order_idcs[:max_points]
    effective_n_w = obj_vals.shape[-2] // X.shape[-2]
    idcs = (idcs / effective_n_w).long().unique()
    return X[idcs]


prune = torch.compile(prune_inferior_points_multi_objective)


def make():
    torch.manual_seed(0)
    model = TwoOutputModel()
    X = torch.rand(6, 2)
    ref_point = torch.tensor([-2.0, -2.0])
    constraint = lambda Y: Y[..., 0] - 0.3  # noqa: E731
    return prune_inferior_points_multi_objective, [
        (model, X, ref_point, None, None, 16, 1.0),
        (model, X, ref_point, None, [constraint], 16, 0.5),
    ]
