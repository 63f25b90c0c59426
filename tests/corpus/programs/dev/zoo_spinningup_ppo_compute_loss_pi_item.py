"""Spinning Up PPO: the `compute_loss_pi(data)` closure reads a dict batch, calls `ac.pi(obs, act)` (a Normal or Categorical distribution) and returns the loss with `pi_info` built from three `.item()` calls.

Source: openai/spinningup@20921137141b154454c0a2698709d9f9a0302101:spinup/algos/pytorch/ppo/ppo.py:220-237 and openai/spinningup@178a7612e47999f7ca7e622b06adfe4f41ac7fe5:spinup/algos/pytorch/ppo/core.py:17-97
Kept: compute_loss_pi verbatim as a closure over `ac` and `clip_ratio`; mlp, Actor,
MLPCategoricalActor, MLPGaussianActor and MLPActorCritic's policy builder (Box ->
Gaussian, Discrete -> Categorical) from core.py; data as PPOBuffer.get returns it
(a dict of float32 tensors).
Simplified: gym spaces are small stand-ins; no value function, MPI, logger or
optimizer; hidden sizes (8, 8), obs 4, act 2, 6 samples.
"""
import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical
from torch.distributions.normal import Normal


class Box:
    def __init__(self, shape):
        self.shape = shape


class Discrete:
    def __init__(self, n):
        self.n = n
        self.shape = ()


def mlp(sizes, activation, output_activation=nn.Identity):
    layers = []
    for j in range(len(sizes)-1):
        act = activation if j < len(sizes)-2 else output_activation
        layers += [nn.Linear(sizes[j], sizes[j+1]), act()]
    return nn.Sequential(*layers)


class Actor(nn.Module):

    def _distribution(self, obs):
        raise NotImplementedError

    def _log_prob_from_distribution(self, pi, act):
        raise NotImplementedError

    def forward(self, obs, act=None):
        # Produce action distributions for given observations, and
        # optionally compute the log likelihood of given actions under
        # those distributions.
        pi = self._distribution(obs)
        logp_a = None
        if act is not None:
            logp_a = self._log_prob_from_distribution(pi, act)
        return pi, logp_a


class MLPCategoricalActor(Actor):

    def __init__(self, obs_dim, act_dim, hidden_sizes, activation):
        super().__init__()
        self.logits_net = mlp([obs_dim] + list(hidden_sizes) + [act_dim], activation)

    def _distribution(self, obs):
        logits = self.logits_net(obs)
        return Categorical(logits=logits)

    def _log_prob_from_distribution(self, pi, act):
        return pi.log_prob(act)


class MLPGaussianActor(Actor):

    def __init__(self, obs_dim, act_dim, hidden_sizes, activation):
        super().__init__()
        log_std = -0.5 * np.ones(act_dim, dtype=np.float32)
        self.log_std = torch.nn.Parameter(torch.as_tensor(log_std))
        self.mu_net = mlp([obs_dim] + list(hidden_sizes) + [act_dim], activation)

    def _distribution(self, obs):
        mu = self.mu_net(obs)
        std = torch.exp(self.log_std)
        return Normal(mu, std)

    def _log_prob_from_distribution(self, pi, act):
        return pi.log_prob(act).sum(axis=-1)    # Last axis sum needed for Torch Normal distribution


class MLPActorCritic(nn.Module):

    def __init__(self, observation_space, action_space,
                 hidden_sizes=(64,64), activation=nn.Tanh):
        super().__init__()

        obs_dim = observation_space.shape[0]

        # policy builder depends on action space
        if isinstance(action_space, Box):
            self.pi = MLPGaussianActor(obs_dim, action_space.shape[0], hidden_sizes, activation)
        elif isinstance(action_space, Discrete):
            self.pi = MLPCategoricalActor(obs_dim, action_space.n, hidden_sizes, activation)


def ppo_loss_fns(ac, clip_ratio=0.2):
    # Set up function for computing PPO policy loss
    def compute_loss_pi(data):
        obs, act, adv, logp_old = data['obs'], data['act'], data['adv'], data['logp']

        # Policy loss
        pi, logp = ac.pi(obs, act)
        ratio = torch.exp(logp - logp_old)
        clip_adv = torch.clamp(ratio, 1-clip_ratio, 1+clip_ratio) * adv
        loss_pi = -(torch.min(ratio * adv, clip_adv)).mean()

        # Useful extra info
        approx_kl = (logp_old - logp).mean().item()
        ent = pi.entropy().mean().item()
        clipped = ratio.gt(1+clip_ratio) | ratio.lt(1-clip_ratio)
        clipfrac = torch.as_tensor(clipped, dtype=torch.float32).mean().item()
        pi_info = dict(kl=approx_kl, ent=ent, cf=clipfrac)

        return loss_pi, pi_info

    return compute_loss_pi


def ppo(observation_space, action_space):
    ac = MLPActorCritic(observation_space, action_space, hidden_sizes=(8, 8))
    compute_loss_pi = torch.compile(ppo_loss_fns(ac))
    return ac, compute_loss_pi


def make():
    torch.manual_seed(0)
    ac = MLPActorCritic(Box((4,)), Box((2,)), hidden_sizes=(8, 8))
    data = dict(obs=torch.randn(6, 4), act=torch.randn(6, 2), ret=torch.randn(6),
                adv=torch.randn(6), logp=torch.randn(6) - 2.0)
    small = {k: v[:3] for k, v in data.items()}
    return ppo_loss_fns(ac), [(data,), (small,)]
