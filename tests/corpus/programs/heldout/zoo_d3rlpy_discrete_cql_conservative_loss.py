"""d3rlpy DiscreteCQL gradient step (the function d3rlpy wraps in torch.compile when `compiled=True`):
optimizer zero_grad, Double-DQN target under no_grad through an ensemble of Q forwarders, Huber TD error
plus the logsumexp conservative term, then `loss.loss.backward()` inside the compiled function.

Source: takuseno/d3rlpy@38c34b6f99fde82875e2ad81d1ba1f7a7da34137:d3rlpy/algos/qlearning/torch/cql_impl.py:237-295,
d3rlpy/algos/qlearning/torch/dqn_impl.py:36-130, d3rlpy/models/torch/q_functions/ensemble_q_function.py:17-215,
d3rlpy/models/torch/q_functions/mean_q_function.py, d3rlpy/models/torch/q_functions/utility.py,
d3rlpy/torch_utility.py:150-161,554-595 (CudaGraphWrapper: `self._func = torch.compile(func)`),
d3rlpy/optimizers/optimizers.py:70-71
Kept: compute_grad / compute_loss / compute_target / inner_predict_best_action, DiscreteCQLImpl's
_compute_conservative_loss, the ensemble forwarder helpers (_reduce_ensemble, compute_ensemble_q_function_error
with its `td_sum += loss.mean()` accumulator and `device=get_device(observations)`, compute_ensemble_q_function_target
with its isinstance dispatch and shape checks), frozen dataclass losses, NamedTuple QFunctionOutput,
OptimizerWrapper.zero_grad(set_to_none=compiled).
Simplified: no QLearningAlgoImplBase / Modules plumbing (modules held directly), no CUDA graph capture
(CPU: compute_grad is passed to torch.compile directly, as CudaGraphWrapper does before capture),
VectorEncoder as a fixed 2-layer MLP, 2 critics, 4-dim observations, 3 actions.
"""
import copy
import dataclasses
from typing import NamedTuple, Optional, Sequence, Union

import torch
import torch.nn.functional as F
from torch import nn


def get_device(x: Union[torch.Tensor, Sequence[torch.Tensor]]) -> str:
    if isinstance(x, torch.Tensor):
        return str(x.device)
    else:
        return str(x[0].device)


def get_batch_size(x: Union[torch.Tensor, Sequence[torch.Tensor]]) -> int:
    if isinstance(x, torch.Tensor):
        return int(x.shape[0])
    else:
        return int(x[0].shape[0])


@dataclasses.dataclass(frozen=True)
class TorchMiniBatch:
    observations: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    next_observations: torch.Tensor
    terminals: torch.Tensor
    intervals: torch.Tensor


class QFunctionOutput(NamedTuple):
    q_value: torch.Tensor
    quantiles: Optional[torch.Tensor]
    taus: Optional[torch.Tensor]


def pick_value_by_action(values, action, keepdim=False):
    assert values.ndim == 2
    action_size = values.shape[1]
    one_hot = F.one_hot(action.view(-1), num_classes=action_size)
    masked_values = values * one_hot.float()
    return masked_values.sum(dim=1, keepdim=keepdim)


def compute_huber_loss(y, target, beta=1.0):
    diff = target - y
    cond = diff.detach().abs() < beta
    return torch.where(cond, 0.5 * diff**2, beta * (diff.abs() - 0.5 * beta))


def compute_reduce(value, reduction_type):
    if reduction_type == "mean":
        return value.mean()
    elif reduction_type == "sum":
        return value.sum()
    elif reduction_type == "none":
        return value.view(-1, 1)
    raise ValueError("invalid reduction type.")


class VectorEncoder(nn.Module):
    def __init__(self, observation_shape, hidden_units):
        super().__init__()
        layers = []
        in_units = [observation_shape[0]] + list(hidden_units[:-1])
        for in_unit, out_unit in zip(in_units, hidden_units):
            layers.append(nn.Linear(in_unit, out_unit))
            layers.append(nn.ReLU())
        self._layers = nn.Sequential(*layers)

    def forward(self, x):
        assert isinstance(x, torch.Tensor)
        return self._layers(x)


class DiscreteMeanQFunction(nn.Module):
    def __init__(self, encoder, hidden_size, action_size):
        super().__init__()
        self._encoder = encoder
        self._fc = nn.Linear(hidden_size, action_size)

    def forward(self, x):
        return QFunctionOutput(
            q_value=self._fc(self._encoder(x)),
            quantiles=None,
            taus=None,
        )


class DiscreteQFunctionForwarder:
    pass


class ContinuousQFunctionForwarder:
    pass


class DiscreteMeanQFunctionForwarder(DiscreteQFunctionForwarder):
    def __init__(self, q_func, action_size):
        self._q_func = q_func
        self._action_size = action_size

    def compute_expected_q(self, x):
        return self._q_func(x).q_value

    def compute_error(self, observations, actions, rewards, target, terminals, gamma=0.99, reduction="mean"):
        one_hot = F.one_hot(actions.view(-1), num_classes=self._action_size)
        value = (self._q_func(observations).q_value * one_hot.float()).sum(
            dim=1, keepdim=True
        )
        y = rewards + gamma * target * (1 - terminals)
        loss = compute_huber_loss(value, y)
        return compute_reduce(loss, reduction)

    def compute_target(self, x, action=None):
        if action is None:
            return self._q_func(x).q_value
        return pick_value_by_action(
            self._q_func(x).q_value, action, keepdim=True
        )


def _reduce_ensemble(y, reduction="min", dim=0, lam=0.75):
    if reduction == "min":
        return y.min(dim=dim).values
    elif reduction == "max":
        return y.max(dim=dim).values
    elif reduction == "mean":
        return y.mean(dim=dim)
    elif reduction == "none":
        return y
    elif reduction == "mix":
        max_values = y.max(dim=dim).values
        min_values = y.min(dim=dim).values
        return lam * min_values + (1.0 - lam) * max_values
    raise ValueError


def compute_ensemble_q_function_error(forwarders, observations, actions, rewards, target, terminals,
                                      gamma=0.99, masks=None):
    assert target.ndim == 2
    td_sum = torch.tensor(
        0.0,
        dtype=torch.float32,
        device=get_device(observations),
    )
    for forwarder in forwarders:
        loss = forwarder.compute_error(
            observations=observations,
            actions=actions,
            rewards=rewards,
            target=target,
            terminals=terminals,
            gamma=gamma,
            reduction="none",
        )
        if masks is not None:
            loss = loss * masks
        td_sum += loss.mean()
    return td_sum


def compute_ensemble_q_function_target(forwarders, action_size, x, action=None, reduction="min", lam=0.75):
    batch_size = get_batch_size(x)
    values_list = []
    for forwarder in forwarders:
        if isinstance(forwarder, ContinuousQFunctionForwarder):
            assert action is not None
            target = forwarder.compute_target(x, action)
        else:
            target = forwarder.compute_target(x, action)
        values_list.append(target.reshape(1, batch_size, -1))

    values = torch.cat(values_list, dim=0)

    if action is None:
        # mean Q function
        if values.shape[2] == action_size:
            return _reduce_ensemble(values, reduction)
        raise NotImplementedError  # distributional Q function (quantile reduction) not kept

    if values.shape[2] == 1:
        return _reduce_ensemble(values, reduction, lam=lam)

    raise NotImplementedError  # distributional Q function (quantile reduction) not kept


class DiscreteEnsembleQFunctionForwarder:
    def __init__(self, forwarders, action_size):
        self._forwarders = forwarders
        self._action_size = action_size

    def compute_expected_q(self, x, reduction="mean"):
        values = []
        for forwarder in self._forwarders:
            value = forwarder.compute_expected_q(x)
            values.append(
                value.view(
                    1,
                    (
                        x[0].shape[0]
                        if isinstance(x, (list, tuple))
                        else x.shape[0]
                    ),
                    self._action_size,
                )
            )
        return _reduce_ensemble(torch.cat(values, dim=0), reduction)

    def compute_error(self, observations, actions, rewards, target, terminals, gamma=0.99, masks=None):
        return compute_ensemble_q_function_error(
            forwarders=self._forwarders,
            observations=observations,
            actions=actions,
            rewards=rewards,
            target=target,
            terminals=terminals,
            gamma=gamma,
            masks=masks,
        )

    def compute_target(self, x, action=None, reduction="min", lam=0.75):
        return compute_ensemble_q_function_target(
            forwarders=self._forwarders,
            action_size=self._action_size,
            x=x,
            action=action,
            reduction=reduction,
            lam=lam,
        )


class OptimizerWrapper:
    def __init__(self, params, optim, compiled):
        self._params = list(params)
        self._optim = optim
        self._compiled = compiled

    def zero_grad(self) -> None:
        self._optim.zero_grad(set_to_none=self._compiled)

    def step(self) -> None:
        self._optim.step()


@dataclasses.dataclass(frozen=True)
class DQNModules:
    q_funcs: nn.ModuleList
    targ_q_funcs: nn.ModuleList
    optim: OptimizerWrapper


@dataclasses.dataclass(frozen=True)
class DQNLoss:
    loss: torch.Tensor


@dataclasses.dataclass(frozen=True)
class DiscreteCQLLoss(DQNLoss):
    td_loss: torch.Tensor
    conservative_loss: torch.Tensor


class DQNImpl:
    def __init__(self, observation_shape, action_size, modules, q_func_forwarder, targ_q_func_forwarder,
                 target_update_interval, gamma, compiled, device):
        self._observation_shape = observation_shape
        self._action_size = action_size
        self._modules = modules
        self._device = device
        self._gamma = gamma
        self._q_func_forwarder = q_func_forwarder
        self._targ_q_func_forwarder = targ_q_func_forwarder
        self._target_update_interval = target_update_interval
        self._compute_grad = (
            torch.compile(self.compute_grad)
            if compiled
            else self.compute_grad
        )

    @property
    def action_size(self) -> int:
        return self._action_size

    def compute_grad(self, batch: TorchMiniBatch) -> DQNLoss:
        self._modules.optim.zero_grad()
        q_tpn = self.compute_target(batch)
        loss = self.compute_loss(batch, q_tpn)
        loss.loss.backward()
        return loss

    def compute_loss(self, batch, q_tpn):
        loss = self._q_func_forwarder.compute_error(
            observations=batch.observations,
            actions=batch.actions.long(),
            rewards=batch.rewards,
            target=q_tpn,
            terminals=batch.terminals,
            gamma=self._gamma**batch.intervals,
        )
        return DQNLoss(loss=loss)

    def compute_target(self, batch):
        with torch.no_grad():
            next_actions = self._targ_q_func_forwarder.compute_expected_q(
                batch.next_observations
            )
            max_action = next_actions.argmax(dim=1)
            return self._targ_q_func_forwarder.compute_target(
                batch.next_observations,
                max_action,
                reduction="min",
            )

    def inner_predict_best_action(self, x):
        return self._q_func_forwarder.compute_expected_q(x).argmax(dim=1)


class DoubleDQNImpl(DQNImpl):
    def compute_target(self, batch):
        with torch.no_grad():
            action = self.inner_predict_best_action(batch.next_observations)
            return self._targ_q_func_forwarder.compute_target(
                batch.next_observations,
                action,
                reduction="min",
            )


class DiscreteCQLImpl(DoubleDQNImpl):
    def __init__(self, observation_shape, action_size, modules, q_func_forwarder, targ_q_func_forwarder,
                 target_update_interval, gamma, alpha, compiled, device):
        super().__init__(
            observation_shape=observation_shape,
            action_size=action_size,
            modules=modules,
            q_func_forwarder=q_func_forwarder,
            targ_q_func_forwarder=targ_q_func_forwarder,
            target_update_interval=target_update_interval,
            gamma=gamma,
            compiled=compiled,
            device=device,
        )
        self._alpha = alpha

    def _compute_conservative_loss(self, obs_t, act_t):
        # compute logsumexp
        values = self._q_func_forwarder.compute_expected_q(obs_t)
        logsumexp = torch.logsumexp(values, dim=1, keepdim=True)

        # estimate action-values under data distribution
        one_hot = F.one_hot(act_t.view(-1), num_classes=self.action_size)
        data_values = (values * one_hot).sum(dim=1, keepdim=True)

        return (logsumexp - data_values).mean()

    def compute_loss(self, batch, q_tpn):
        td_loss = super().compute_loss(batch, q_tpn).loss
        conservative_loss = self._compute_conservative_loss(
            batch.observations, batch.actions.long()
        )
        loss = td_loss + self._alpha * conservative_loss
        return DiscreteCQLLoss(
            loss=loss, td_loss=td_loss, conservative_loss=conservative_loss
        )


def create_impl(compiled):
    obs_shape, action_size, n_critics = (4,), 3, 2
    q_funcs = nn.ModuleList(
        [DiscreteMeanQFunction(VectorEncoder(obs_shape, [16, 16]), 16, action_size) for _ in range(n_critics)]
    )
    targ_q_funcs = copy.deepcopy(q_funcs)
    optim = OptimizerWrapper(q_funcs.parameters(), torch.optim.Adam(q_funcs.parameters(), lr=6.25e-5), compiled)
    modules = DQNModules(q_funcs=q_funcs, targ_q_funcs=targ_q_funcs, optim=optim)
    forwarder = DiscreteEnsembleQFunctionForwarder(
        [DiscreteMeanQFunctionForwarder(q, action_size) for q in q_funcs], action_size)
    targ_forwarder = DiscreteEnsembleQFunctionForwarder(
        [DiscreteMeanQFunctionForwarder(q, action_size) for q in targ_q_funcs], action_size)
    return DiscreteCQLImpl(obs_shape, action_size, modules, forwarder, targ_forwarder,
                           target_update_interval=8000, gamma=0.99, alpha=1.0,
                           compiled=compiled, device="cpu:0")


def make():
    torch.manual_seed(0)
    impl = create_impl(compiled=False)
    batch = TorchMiniBatch(
        observations=torch.randn(5, 4),
        actions=torch.randint(0, 3, (5, 1)).float(),
        rewards=torch.randn(5, 1),
        next_observations=torch.randn(5, 4),
        terminals=torch.tensor([[0.0], [0.0], [1.0], [0.0], [0.0]]),
        intervals=torch.ones(5, 1),
    )
    return impl.compute_grad, [(batch,)]
