"""Spinning Up SAC: SquashedGaussianMLPActor samples from `Normal(mu, std)` with `rsample()`, tanh-squash log-prob correction, `deterministic`/`with_logprob` flags.

Source: openai/spinningup@1126eac8176373edd9633053eaa6e9f0b1848b62:spinup/algos/pytorch/sac/core.py:17-178
Kept: mlp, LOG_STD_MIN/MAX, SquashedGaussianMLPActor, MLPQFunction and
MLPActorCritic (obs/act dims and act_limit read from the spaces) verbatim.
Simplified: gym's Box is a small stand-in with shape/high; hidden sizes (16, 16);
the discrete actor-critic is left out.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions.normal import Normal


def mlp(sizes, activation, output_activation=nn.Identity):
    layers = []
    for j in range(len(sizes) - 1):
        act = activation if j < len(sizes) - 2 else output_activation
        layers += [nn.Linear(sizes[j], sizes[j + 1]), act()]
    return nn.Sequential(*layers)


LOG_STD_MAX = 2
LOG_STD_MIN = -20


class SquashedGaussianMLPActor(nn.Module):

    def __init__(self, obs_dim, act_dim, hidden_sizes, activation, act_limit):
        super().__init__()
        self.net = mlp([obs_dim] + list(hidden_sizes), activation, activation)
        self.mu_layer = nn.Linear(hidden_sizes[-1], act_dim)
        self.log_std_layer = nn.Linear(hidden_sizes[-1], act_dim)
        self.act_limit = act_limit

    def forward(self, obs, deterministic=False, with_logprob=True):
        net_out = self.net(obs)
        mu = self.mu_layer(net_out)
        log_std = self.log_std_layer(net_out)
        log_std = torch.clamp(log_std, LOG_STD_MIN, LOG_STD_MAX)
        std = torch.exp(log_std)

        # Pre-squash distribution and sample
        pi_distribution = Normal(mu, std)
        if deterministic:
            # Only used for evaluating policy at test time.
            pi_action = mu
        else:
            pi_action = pi_distribution.rsample()

        if with_logprob:
            # Compute logprob from Gaussian, and then apply correction for Tanh squashing.
            logp_pi = pi_distribution.log_prob(pi_action).sum(axis=-1)
            logp_pi -= (2 * (np.log(2) - pi_action - F.softplus(-2 * pi_action))).sum(axis=1)
        else:
            logp_pi = None

        pi_action = torch.tanh(pi_action)
        pi_action = self.act_limit * pi_action

        return pi_action, logp_pi


class MLPQFunction(nn.Module):

    def __init__(self, obs_dim, act_dim, hidden_sizes, activation):
        super().__init__()
        self.q = mlp([obs_dim + act_dim] + list(hidden_sizes) + [1], activation)

    def forward(self, obs, act):
        q = self.q(torch.cat([obs, act], dim=-1))
        return torch.squeeze(q, -1)  # Critical to ensure q has right shape.


class MLPActorCritic(nn.Module):

    def __init__(self, observation_space, action_space, hidden_sizes=(256, 256),
                 activation=nn.ReLU):
        super().__init__()

        obs_dim = observation_space.shape[0]
        act_dim = action_space.shape[0]
        act_limit = action_space.high[0]

        # build policy and value functions
        self.pi = SquashedGaussianMLPActor(obs_dim, act_dim, hidden_sizes, activation, act_limit)
        self.q1 = MLPQFunction(obs_dim, act_dim, hidden_sizes, activation)
        self.q2 = MLPQFunction(obs_dim, act_dim, hidden_sizes, activation)

    def act(self, obs, deterministic=False):
        with torch.no_grad():
            a, _ = self.pi(obs, deterministic, False)
            return a.numpy()


class Box:
    def __init__(self, low, high, shape):
        self.shape = shape
        self.high = np.full(shape, high, dtype=np.float32)
        self.low = np.full(shape, low, dtype=np.float32)


def sac(obs_space, act_space):
    ac = MLPActorCritic(obs_space, act_space, hidden_sizes=(16, 16))
    ac.pi = torch.compile(ac.pi)
    return ac


def make():
    torch.manual_seed(0)
    ac = MLPActorCritic(Box(-1.0, 1.0, (5,)), Box(-2.0, 2.0, (2,)), hidden_sizes=(16, 16))
    o = torch.randn(4, 5)
    return ac.pi, [(o,), (o, True, False), (o, False, False)]
