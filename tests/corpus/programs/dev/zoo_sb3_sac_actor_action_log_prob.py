"""stable-baselines3 SAC actor: action_log_prob builds a Normal, rsamples, squashes with tanh and corrects the log-prob through TanhBijector.

Source: DLR-RM/stable-baselines3@e05d2dbe6eda0acd0ef2e316e3e4065677add3eb:stable_baselines3/sac/policies.py:20-175
Also: stable_baselines3/common/distributions.py:82-91,112-262,627-663 (get_actions,
sum_independent_dims, DiagGaussianDistribution, SquashedDiagGaussianDistribution,
TanhBijector), common/preprocessing.py:91-124 (preprocess_obs),
common/policies.py:122-131 (extract_features), common/torch_layers.py:31-44,108-181
(FlattenExtractor, create_mlp).
Kept: the Actor's non-gSDE path (latent_pi MLP, mu and log_std heads, the
LOG_STD_MIN/MAX clamp), the dist's proba_distribution -> get_actions ->
log_prob chain with `self.gaussian_actions` stored on the distribution
object, TanhBijector.inverse's finfo eps clamp.
Simplified: gymnasium's Box replaced by a tiny stand-in class; no gSDE,
no BasePolicy save/load; obs dim 5, net_arch [16, 16], 2 actions.
"""
from typing import Any, Optional

import numpy as np
import torch as th
import torch.nn.functional as F
from torch import nn
from torch.distributions import Normal

# CAP the standard deviation of the actor
LOG_STD_MAX = 2
LOG_STD_MIN = -20


class Box:
    """Stand-in for gymnasium.spaces.Box (only what the policy reads)."""

    def __init__(self, low, high, shape):
        self.low = np.full(shape, low, dtype=np.float32)
        self.high = np.full(shape, high, dtype=np.float32)
        self.shape = shape
        self.dtype = np.float32


def is_image_space(observation_space) -> bool:
    return isinstance(observation_space, Box) and len(observation_space.shape) == 3


def preprocess_obs(obs, observation_space, normalize_images: bool = True):
    assert isinstance(obs, th.Tensor), f"Expecting a torch Tensor, but got {type(obs)}"

    if isinstance(observation_space, Box):
        if normalize_images and is_image_space(observation_space):
            return obs.float() / 255.0
        return obs.float()
    else:
        raise NotImplementedError(f"Preprocessing not implemented for {observation_space}")


def get_action_dim(action_space) -> int:
    if isinstance(action_space, Box):
        return int(np.prod(action_space.shape))
    raise NotImplementedError(f"{action_space} action space is not supported")


def create_mlp(input_dim: int, output_dim: int, net_arch: list, activation_fn=nn.ReLU, squash_output: bool = False,
               with_bias: bool = True) -> list:
    modules = []
    if len(net_arch) > 0:
        modules.append(nn.Linear(input_dim, net_arch[0], bias=with_bias))
        modules.append(activation_fn())

    for idx in range(len(net_arch) - 1):
        modules.append(nn.Linear(net_arch[idx], net_arch[idx + 1], bias=with_bias))
        modules.append(activation_fn())

    if output_dim > 0:
        last_layer_dim = net_arch[-1] if len(net_arch) > 0 else input_dim
        modules.append(nn.Linear(last_layer_dim, output_dim, bias=with_bias))
    if squash_output:
        modules.append(nn.Tanh())
    return modules


class FlattenExtractor(nn.Module):
    def __init__(self, observation_space) -> None:
        super().__init__()
        self._features_dim = int(np.prod(observation_space.shape))
        self.flatten = nn.Flatten()

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return self.flatten(observations)


def sum_independent_dims(tensor: th.Tensor) -> th.Tensor:
    if len(tensor.shape) > 1:
        tensor = tensor.sum(dim=1)
    else:
        tensor = tensor.sum()
    return tensor


class DiagGaussianDistribution:
    distribution: Normal

    def __init__(self, action_dim: int):
        super().__init__()
        self.action_dim = action_dim

    def get_actions(self, deterministic: bool = False) -> th.Tensor:
        if deterministic:
            return self.mode()
        return self.sample()

    def proba_distribution(self, mean_actions: th.Tensor, log_std: th.Tensor):
        action_std = th.ones_like(mean_actions) * log_std.exp()
        self.distribution = Normal(mean_actions, action_std)
        return self

    def log_prob(self, actions: th.Tensor) -> th.Tensor:
        log_prob = self.distribution.log_prob(actions)
        return sum_independent_dims(log_prob)

    def entropy(self) -> Optional[th.Tensor]:
        return sum_independent_dims(self.distribution.entropy())

    def sample(self) -> th.Tensor:
        # Reparametrization trick to pass gradients
        return self.distribution.rsample()

    def mode(self) -> th.Tensor:
        return self.distribution.mean

    def actions_from_params(self, mean_actions: th.Tensor, log_std: th.Tensor, deterministic: bool = False) -> th.Tensor:
        # Update the proba distribution
        self.proba_distribution(mean_actions, log_std)
        return self.get_actions(deterministic=deterministic)

    def log_prob_from_params(self, mean_actions: th.Tensor, log_std: th.Tensor):
        actions = self.actions_from_params(mean_actions, log_std)
        log_prob = self.log_prob(actions)
        return actions, log_prob


class TanhBijector:
    def __init__(self, epsilon: float = 1e-6):
        super().__init__()
        self.epsilon = epsilon

    @staticmethod
    def forward(x: th.Tensor) -> th.Tensor:
        return th.tanh(x)

    @staticmethod
    def atanh(x: th.Tensor) -> th.Tensor:
        return 0.5 * (x.log1p() - (-x).log1p())

    @staticmethod
    def inverse(y: th.Tensor) -> th.Tensor:
        eps = th.finfo(y.dtype).eps
        # Clip the action to avoid NaN
        return TanhBijector.atanh(y.clamp(min=-1.0 + eps, max=1.0 - eps))


class SquashedDiagGaussianDistribution(DiagGaussianDistribution):
    def __init__(self, action_dim: int, epsilon: float = 1e-6):
        super().__init__(action_dim)
        # Avoid NaN (prevents division by zero or log of zero)
        self.epsilon = epsilon
        self.gaussian_actions: Optional[th.Tensor] = None

    def proba_distribution(self, mean_actions: th.Tensor, log_std: th.Tensor):
        super().proba_distribution(mean_actions, log_std)
        return self

    def log_prob(self, actions: th.Tensor, gaussian_actions: Optional[th.Tensor] = None) -> th.Tensor:
        if gaussian_actions is None:
            # It will be clipped to avoid NaN when inversing tanh
            gaussian_actions = TanhBijector.inverse(actions)

        # Log likelihood for a Gaussian distribution
        log_prob = super().log_prob(gaussian_actions)
        # Squash correction (from original SAC implementation)
        # this comes from the fact that tanh is bijective and differentiable
        log_prob -= th.sum(th.log(1 - actions**2 + self.epsilon), dim=1)
        return log_prob

    def entropy(self) -> Optional[th.Tensor]:
        return None

    def sample(self) -> th.Tensor:
        # Reparametrization trick to pass gradients
        self.gaussian_actions = super().sample()
        return th.tanh(self.gaussian_actions)

    def mode(self) -> th.Tensor:
        self.gaussian_actions = super().mode()
        # Squash the output
        return th.tanh(self.gaussian_actions)

    def log_prob_from_params(self, mean_actions: th.Tensor, log_std: th.Tensor):
        action = self.actions_from_params(mean_actions, log_std)
        log_prob = self.log_prob(action, self.gaussian_actions)
        return action, log_prob


class Actor(nn.Module):
    def __init__(self, observation_space, action_space, net_arch, features_extractor, features_dim,
                 activation_fn=nn.ReLU, use_sde: bool = False, log_std_init: float = -3, normalize_images: bool = True):
        super().__init__()
        self.observation_space = observation_space
        self.action_space = action_space
        self.features_extractor = features_extractor
        self.normalize_images = normalize_images

        # Save arguments to re-create object at loading
        self.use_sde = use_sde
        self.net_arch = net_arch
        self.features_dim = features_dim
        self.activation_fn = activation_fn
        self.log_std_init = log_std_init

        action_dim = get_action_dim(self.action_space)
        latent_pi_net = create_mlp(features_dim, -1, net_arch, activation_fn)
        self.latent_pi = nn.Sequential(*latent_pi_net)
        last_layer_dim = net_arch[-1] if len(net_arch) > 0 else features_dim

        self.action_dist = SquashedDiagGaussianDistribution(action_dim)
        self.mu = nn.Linear(last_layer_dim, action_dim)
        self.log_std = nn.Linear(last_layer_dim, action_dim)

    def extract_features(self, obs, features_extractor):
        preprocessed_obs = preprocess_obs(obs, self.observation_space, normalize_images=self.normalize_images)
        return features_extractor(preprocessed_obs)

    def get_action_dist_params(self, obs):
        features = self.extract_features(obs, self.features_extractor)
        latent_pi = self.latent_pi(features)
        mean_actions = self.mu(latent_pi)

        if self.use_sde:
            return mean_actions, self.log_std, dict(latent_sde=latent_pi)
        # Unstructured exploration (Original implementation)
        log_std = self.log_std(latent_pi)
        # Original Implementation to cap the standard deviation
        log_std = th.clamp(log_std, LOG_STD_MIN, LOG_STD_MAX)
        return mean_actions, log_std, {}

    def forward(self, obs, deterministic: bool = False) -> th.Tensor:
        mean_actions, log_std, kwargs = self.get_action_dist_params(obs)
        # Note: the action is squashed
        return self.action_dist.actions_from_params(mean_actions, log_std, deterministic=deterministic, **kwargs)

    def action_log_prob(self, obs):
        mean_actions, log_std, kwargs = self.get_action_dist_params(obs)
        # return action and associated log prob
        return self.action_dist.log_prob_from_params(mean_actions, log_std, **kwargs)


def make_actor():
    observation_space = Box(-10.0, 10.0, (5,))
    action_space = Box(-1.0, 1.0, (2,))
    extractor = FlattenExtractor(observation_space)
    return Actor(observation_space, action_space, [16, 16], extractor, extractor._features_dim)


actor = make_actor()
action_log_prob = th.compile(actor.action_log_prob, backend="inductor")


def make():
    th.manual_seed(0)
    actor = make_actor()
    obs = th.randn(4, 5)
    return actor.action_log_prob, [(obs,), (obs[:1] * 3,)]
