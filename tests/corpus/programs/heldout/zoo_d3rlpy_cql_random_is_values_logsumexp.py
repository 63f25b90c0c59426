"""d3rlpy CQL (continuous) conservative loss: importance-sampled logsumexp over policy actions at t and t+1
(squashed-Gaussian `rsample((n,))` with tanh Jacobian log-probs) and uniform random actions, against the
ensemble Q values of the dataset actions.

Source: takuseno/d3rlpy@38c34b6f99fde82875e2ad81d1ba1f7a7da34137:d3rlpy/algos/qlearning/torch/cql_impl.py:109-194,
d3rlpy/algos/qlearning/torch/utility.py:54-94 (sample_q_values_with_policy), d3rlpy/torch_utility.py:150-183,
d3rlpy/models/torch/distributions.py:112-169, d3rlpy/models/torch/policies.py:24-48,100-145,
d3rlpy/models/torch/q_functions/ensemble_q_function.py:17-33,224-250, d3rlpy/models/torch/q_functions/mean_q_function.py,
d3rlpy/models/torch/encoders.py (VectorEncoder / VectorEncoderWithAction)
Kept: CQLImpl._compute_policy_is_values / _compute_random_is_values / _compute_conservative_loss verbatim
(`zero_tensor.uniform_(-1.0, 1.0)`, `math.log(0.5**self._action_size)`, `device=self._device`, isinstance
batch-size checks), sample_q_values_with_policy, expand_and_repeat_recursively / flatten_left_recursively,
SquashedGaussianDistribution sampling, NormalPolicy (Linear logstd, clamp), the continuous ensemble
forwarder's compute_expected_q with reduction "none".
Simplified: no SACImpl/Modules plumbing (policy and forwarders held directly); the conservative-loss method
is compiled on its own (d3rlpy compiles the enclosing critic-gradient function); encoders are fixed 2-layer
MLPs, 2 critics, 4-dim observations, 2-dim actions, 3 action samples.
"""
import dataclasses
import math
from typing import NamedTuple, Optional, Sequence, Union

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Normal


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


def flatten_left_recursively(x, dim):
    if isinstance(x, torch.Tensor):
        return x.reshape([-1, *x.shape[dim + 1 :]])
    else:
        return [flatten_left_recursively(_x, dim) for _x in x]


def expand_and_repeat_recursively(x, n):
    if isinstance(x, torch.Tensor):
        # repeat observation
        # (batch_size, M) -> (batch_size, 1, M)
        reshaped_x = x.view(x.shape[0], 1, *x.shape[1:])
        # (batch_sie, 1, M) -> (batch_size, N, M)
        return reshaped_x.expand(x.shape[0], n, *x.shape[1:])
    else:
        return [expand_and_repeat_recursively(_x, n) for _x in x]


class ActionOutput(NamedTuple):
    mu: torch.Tensor
    squashed_mu: torch.Tensor
    logstd: Optional[torch.Tensor]


class SquashedGaussianDistribution:
    def __init__(self, loc, std):
        self._mean = loc
        self._std = std
        self._dist = Normal(self._mean, self._std)

    def sample_n_with_log_prob(self, n):
        raw_y = self._dist.rsample((n,))
        log_prob = self._log_prob_from_raw_y(raw_y)
        return torch.tanh(raw_y).transpose(0, 1), log_prob.transpose(0, 1)

    def _log_prob_from_raw_y(self, raw_y):
        jacob = 2 * (math.log(2) - raw_y - F.softplus(-2 * raw_y))
        return (self._dist.log_prob(raw_y) - jacob).sum(dim=-1, keepdims=True)


def build_squashed_gaussian_distribution(action):
    assert action.logstd is not None
    return SquashedGaussianDistribution(loc=action.mu, std=action.logstd.exp())


class NormalPolicy(nn.Module):
    def __init__(self, encoder, hidden_size, action_size, min_logstd, max_logstd, use_std_parameter):
        super().__init__()
        self._action_size = action_size
        self._encoder = encoder
        self._min_logstd = min_logstd
        self._max_logstd = max_logstd
        self._use_std_parameter = use_std_parameter
        self._mu = nn.Linear(hidden_size, action_size)
        if use_std_parameter:
            initial_logstd = torch.zeros(1, action_size, dtype=torch.float32)
            self._logstd = nn.Parameter(initial_logstd)
        else:
            self._logstd = nn.Linear(hidden_size, action_size)

    def forward(self, x, *args):
        h = self._encoder(x)
        mu = self._mu(h)

        if self._use_std_parameter:
            assert isinstance(self._logstd, nn.Parameter)
            logstd = torch.sigmoid(self._logstd)
            base_logstd = self._max_logstd - self._min_logstd
            clipped_logstd = self._min_logstd + logstd * base_logstd
        else:
            assert isinstance(self._logstd, nn.Linear)
            logstd = self._logstd(h)
            clipped_logstd = logstd.clamp(self._min_logstd, self._max_logstd)

        return ActionOutput(mu, torch.tanh(mu), clipped_logstd)


class VectorEncoderWithAction(nn.Module):
    def __init__(self, observation_shape, action_size, hidden_units, discrete_action=False):
        super().__init__()
        self._action_size = action_size
        self._discrete_action = discrete_action
        layers = []
        in_units = [observation_shape[0] + action_size] + list(hidden_units[:-1])
        for in_unit, out_unit in zip(in_units, hidden_units):
            layers.append(nn.Linear(in_unit, out_unit))
            layers.append(nn.ReLU())
        self._layers = nn.Sequential(*layers)

    def forward(self, x, action):
        assert isinstance(x, torch.Tensor)
        if self._discrete_action:
            action = F.one_hot(
                action.view(-1).long(), num_classes=self._action_size
            ).float()
        x = torch.cat([x, action], dim=1)
        return self._layers(x)


class QFunctionOutput(NamedTuple):
    q_value: torch.Tensor
    quantiles: Optional[torch.Tensor]
    taus: Optional[torch.Tensor]


class ContinuousMeanQFunction(nn.Module):
    def __init__(self, encoder, hidden_size):
        super().__init__()
        self._encoder = encoder
        self._fc = nn.Linear(hidden_size, 1)

    def forward(self, x, action):
        return QFunctionOutput(
            q_value=self._fc(self._encoder(x, action)),
            quantiles=None,
            taus=None,
        )


class ContinuousMeanQFunctionForwarder:
    def __init__(self, q_func):
        self._q_func = q_func

    def compute_expected_q(self, x, action):
        return self._q_func(x, action).q_value


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


class ContinuousEnsembleQFunctionForwarder:
    def __init__(self, forwarders, action_size):
        self._forwarders = forwarders
        self._action_size = action_size

    def compute_expected_q(self, x, action, reduction="mean"):
        values = []
        for forwarder in self._forwarders:
            value = forwarder.compute_expected_q(x, action)
            values.append(
                value.view(
                    1,
                    (
                        x[0].shape[0]
                        if isinstance(x, (list, tuple))
                        else x.shape[0]
                    ),
                    1,
                )
            )
        return _reduce_ensemble(torch.cat(values, dim=0), reduction)


def sample_q_values_with_policy(policy, q_func_forwarder, policy_observations, value_observations,
                                n_action_samples, detach_policy_output):
    dist = build_squashed_gaussian_distribution(policy(policy_observations))
    # (batch, n, action), (batch, n)
    policy_actions, n_log_probs = dist.sample_n_with_log_prob(n_action_samples)

    if detach_policy_output:
        policy_actions = policy_actions.detach()
        n_log_probs = n_log_probs.detach()

    # (batch, observation) -> (batch, n, observation)
    repeated_obs = expand_and_repeat_recursively(
        x=value_observations,
        n=n_action_samples,
    )
    # (batch, n, observation) -> (batch * n, observation)
    flat_obs = flatten_left_recursively(repeated_obs, dim=1)
    # (batch, n, action) -> (batch * n, action)
    flat_policy_acts = policy_actions.reshape(-1, policy_actions.shape[-1])

    # estimate action-values for policy actions
    # (M, batch * n, 1)
    policy_values = q_func_forwarder.compute_expected_q(
        flat_obs, flat_policy_acts, "none"
    )
    batch_size = (
        policy_observations.shape[0]
        if isinstance(policy_observations, torch.Tensor)
        else policy_observations[0].shape[0]
    )
    policy_values = policy_values.view(-1, batch_size, n_action_samples)
    log_probs = n_log_probs.view(1, -1, n_action_samples)

    # (M, batch, n), (1, batch, n)
    return policy_values, log_probs


@dataclasses.dataclass(frozen=True)
class CQLModules:
    policy: NormalPolicy
    q_funcs: nn.ModuleList
    log_alpha: nn.Parameter


class CQLImpl:
    def __init__(self, observation_shape, action_size, modules, q_func_forwarder, alpha_threshold,
                 conservative_weight, n_action_samples, device):
        self._observation_shape = observation_shape
        self._action_size = action_size
        self._modules = modules
        self._q_func_forwarder = q_func_forwarder
        self._alpha_threshold = alpha_threshold
        self._conservative_weight = conservative_weight
        self._n_action_samples = n_action_samples
        self._device = device

    def _compute_policy_is_values(self, policy_obs, value_obs, returns_to_go):
        return sample_q_values_with_policy(
            policy=self._modules.policy,
            q_func_forwarder=self._q_func_forwarder,
            policy_observations=policy_obs,
            value_observations=value_obs,
            n_action_samples=self._n_action_samples,
            detach_policy_output=True,
        )

    def _compute_random_is_values(self, obs):
        # (batch, observation) -> (batch, n, observation)
        repeated_obs = expand_and_repeat_recursively(
            obs, self._n_action_samples
        )
        # (batch, n, observation) -> (batch * n, observation)
        flat_obs = flatten_left_recursively(repeated_obs, dim=1)

        # estimate action-values for actions from uniform distribution
        # uniform distribution between [-1.0, 1.0]
        batch_size = (
            obs.shape[0] if isinstance(obs, torch.Tensor) else obs[0].shape[0]
        )
        flat_shape = (batch_size * self._n_action_samples, self._action_size)
        zero_tensor = torch.zeros(flat_shape, device=self._device)
        random_actions = zero_tensor.uniform_(-1.0, 1.0)
        random_values = self._q_func_forwarder.compute_expected_q(
            flat_obs, random_actions, "none"
        )
        random_values = random_values.view(
            -1, batch_size, self._n_action_samples
        )
        random_log_probs = math.log(0.5**self._action_size)

        # importance sampling
        return random_values, random_log_probs

    def _compute_conservative_loss(self, obs_t, act_t, obs_tp1, returns_to_go):
        policy_values_t, log_probs_t = self._compute_policy_is_values(
            policy_obs=obs_t,
            value_obs=obs_t,
            returns_to_go=returns_to_go,
        )
        policy_values_tp1, log_probs_tp1 = self._compute_policy_is_values(
            policy_obs=obs_tp1,
            value_obs=obs_t,
            returns_to_go=returns_to_go,
        )
        random_values, random_log_probs = self._compute_random_is_values(obs_t)

        # compute logsumexp
        # (n critics, batch, 3 * n samples) -> (n critics, batch, 1)
        target_values = torch.cat(
            [
                policy_values_t - log_probs_t,
                policy_values_tp1 - log_probs_tp1,
                random_values - random_log_probs,
            ],
            dim=2,
        )
        logsumexp = torch.logsumexp(target_values, dim=2, keepdim=True)

        # estimate action-values for data actions
        data_values = self._q_func_forwarder.compute_expected_q(
            obs_t, act_t, "none"
        )

        loss = (logsumexp - data_values).mean(dim=[1, 2])

        return self._conservative_weight * (loss - self._alpha_threshold)


def create_impl():
    obs_shape, action_size = (4,), 2
    policy = NormalPolicy(VectorEncoder(obs_shape, [16, 16]), 16, action_size,
                          min_logstd=-20.0, max_logstd=2.0, use_std_parameter=False)
    q_funcs = nn.ModuleList(
        [ContinuousMeanQFunction(VectorEncoderWithAction(obs_shape, action_size, [16, 16]), 16) for _ in range(2)]
    )
    modules = CQLModules(policy=policy, q_funcs=q_funcs, log_alpha=nn.Parameter(torch.zeros(1, 1)))
    forwarder = ContinuousEnsembleQFunctionForwarder(
        [ContinuousMeanQFunctionForwarder(q) for q in q_funcs], action_size)
    return CQLImpl(obs_shape, action_size, modules, forwarder, alpha_threshold=10.0,
                   conservative_weight=5.0, n_action_samples=3, device="cpu:0")


def make():
    torch.manual_seed(0)
    impl = create_impl()
    obs_t = torch.randn(5, 4)
    act_t = torch.rand(5, 2) * 2 - 1
    obs_tp1 = torch.randn(5, 4)
    returns_to_go = torch.randn(5, 1)
    return impl._compute_conservative_loss, [(obs_t, act_t, obs_tp1, returns_to_go)]


def compiled_conservative_loss():
    impl = create_impl()
    return torch.compile(impl._compute_conservative_loss)
