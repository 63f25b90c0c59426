"""IQL critic losses: expectile value loss and a twin-Q loss summed with a generator over a tuple.

Source: gwthomas/IQL-PyTorch@9502a53d3e2fdc86144acd56bdbf4c6ce3eb07f3:src/iql.py:14-15,35-55 (asymmetric_l2_loss,
ImplicitQLearning.update value and Q parts), src/value_functions.py:6-27 (TwinQ, ValueFunction), src/util.py:17-41
Kept: the no_grad target computation, asymmetric_l2_loss verbatim, `sum(F.mse_loss(q, targets) for q in qs) /
len(qs)`, TwinQ.both / torch.min(*...), mlp() with squeeze_output.
Simplified: the backward/optimizer steps are left out (the losses are returned); hidden size 8; the
hyper-parameters live on a small module instead of the full ImplicitQLearning.
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


class Squeeze(nn.Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return x.squeeze(dim=self.dim)


def mlp(dims, activation=nn.ReLU, output_activation=None, squeeze_output=False):
    n_dims = len(dims)
    assert n_dims >= 2, 'MLP requires at least two dims (input and output)'

    layers = []
    for i in range(n_dims - 2):
        layers.append(nn.Linear(dims[i], dims[i+1]))
        layers.append(activation())
    layers.append(nn.Linear(dims[-2], dims[-1]))
    if output_activation is not None:
        layers.append(output_activation())
    if squeeze_output:
        assert dims[-1] == 1
        layers.append(Squeeze(-1))
    net = nn.Sequential(*layers)
    net.to(dtype=torch.float32)
    return net


class TwinQ(nn.Module):
    def __init__(self, state_dim, action_dim, hidden_dim=8, n_hidden=2):
        super().__init__()
        dims = [state_dim + action_dim, *([hidden_dim] * n_hidden), 1]
        self.q1 = mlp(dims, squeeze_output=True)
        self.q2 = mlp(dims, squeeze_output=True)

    def both(self, state, action):
        sa = torch.cat([state, action], 1)
        return self.q1(sa), self.q2(sa)

    def forward(self, state, action):
        return torch.min(*self.both(state, action))


class ValueFunction(nn.Module):
    def __init__(self, state_dim, hidden_dim=8, n_hidden=2):
        super().__init__()
        dims = [state_dim, *([hidden_dim] * n_hidden), 1]
        self.v = mlp(dims, squeeze_output=True)

    def forward(self, state):
        return self.v(state)


def asymmetric_l2_loss(u, tau):
    return torch.mean(torch.abs(tau - (u < 0).float()) * u**2)


class IQLCritic(nn.Module):
    def __init__(self, qf, vf, tau, discount=0.99):
        super().__init__()
        self.qf = qf
        self.q_target = copy.deepcopy(qf).requires_grad_(False)
        self.vf = vf
        self.tau = tau
        self.discount = discount

    def forward(self, observations, actions, next_observations, rewards, terminals):
        with torch.no_grad():
            target_q = self.q_target(observations, actions)
            next_v = self.vf(next_observations)

        # Update value function
        v = self.vf(observations)
        adv = target_q - v
        v_loss = asymmetric_l2_loss(adv, self.tau)

        # Update Q function
        targets = rewards + (1. - terminals.float()) * self.discount * next_v.detach()
        qs = self.qf.both(observations, actions)
        q_loss = sum(F.mse_loss(q, targets) for q in qs) / len(qs)
        return v_loss, q_loss, adv


def build_critic(obs_dim=5, act_dim=3):
    return IQLCritic(TwinQ(obs_dim, act_dim), ValueFunction(obs_dim), tau=0.7)


critic = torch.compile(build_critic())


def make():
    torch.manual_seed(0)
    obs = torch.randn(6, 5)
    actions = torch.rand(6, 3) * 2 - 1
    next_obs = torch.randn(6, 5)
    rewards = torch.randn(6)
    terminals = torch.tensor([0, 0, 1, 0, 0, 1], dtype=torch.bool)
    return build_critic(), [(obs, actions, next_obs, rewards, terminals)]
