"""IQL training step: the whole `ImplicitQLearning.update` (three backward/optimizer steps, EMA of the
target Q through `.data`, cosine LR schedule) compiled as one method.

Source: gwthomas/IQL-PyTorch@9502a53d3e2fdc86144acd56bdbf4c6ce3eb07f3:src/iql.py:14-73, src/util.py:17-49,
src/value_functions.py:6-27, src/policy.py:12-25
Kept: update() verbatim (no_grad targets, asymmetric_l2_loss, zero_grad(set_to_none=True)/backward/step for
value, Q and policy, update_exponential_moving_average over zip(parameters()), the isinstance dispatch on the
policy output, policy_lr_schedule.step()); optimizer_factory plumbing.
Simplified: DEFAULT_DEVICE is CPU (no .to calls); hidden size 8; Adam as the optimizer factory.
"""
import copy
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import MultivariateNormal
from torch.optim.lr_scheduler import CosineAnnealingLR


EXP_ADV_MAX = 100.
LOG_STD_MIN = -5.0
LOG_STD_MAX = 2.0


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


def update_exponential_moving_average(target, source, alpha):
    for target_param, source_param in zip(target.parameters(), source.parameters()):
        target_param.data.mul_(1. - alpha).add_(source_param.data, alpha=alpha)


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


class GaussianPolicy(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden_dim=8, n_hidden=2):
        super().__init__()
        self.net = mlp([obs_dim, *([hidden_dim] * n_hidden), act_dim])
        self.log_std = nn.Parameter(torch.zeros(act_dim, dtype=torch.float32))

    def forward(self, obs):
        mean = self.net(obs)
        std = torch.exp(self.log_std.clamp(LOG_STD_MIN, LOG_STD_MAX))
        scale_tril = torch.diag(std)
        return MultivariateNormal(mean, scale_tril=scale_tril)


def asymmetric_l2_loss(u, tau):
    return torch.mean(torch.abs(tau - (u < 0).float()) * u**2)


class ImplicitQLearning(nn.Module):
    def __init__(self, qf, vf, policy, optimizer_factory, max_steps,
                 tau, beta, discount=0.99, alpha=0.005):
        super().__init__()
        self.qf = qf
        self.q_target = copy.deepcopy(qf).requires_grad_(False)
        self.vf = vf
        self.policy = policy
        self.v_optimizer = optimizer_factory(self.vf.parameters())
        self.q_optimizer = optimizer_factory(self.qf.parameters())
        self.policy_optimizer = optimizer_factory(self.policy.parameters())
        self.policy_lr_schedule = CosineAnnealingLR(self.policy_optimizer, max_steps)
        self.tau = tau
        self.beta = beta
        self.discount = discount
        self.alpha = alpha

    def update(self, observations, actions, next_observations, rewards, terminals):
        with torch.no_grad():
            target_q = self.q_target(observations, actions)
            next_v = self.vf(next_observations)

        # Update value function
        v = self.vf(observations)
        adv = target_q - v
        v_loss = asymmetric_l2_loss(adv, self.tau)
        self.v_optimizer.zero_grad(set_to_none=True)
        v_loss.backward()
        self.v_optimizer.step()

        # Update Q function
        targets = rewards + (1. - terminals.float()) * self.discount * next_v.detach()
        qs = self.qf.both(observations, actions)
        q_loss = sum(F.mse_loss(q, targets) for q in qs) / len(qs)
        self.q_optimizer.zero_grad(set_to_none=True)
        q_loss.backward()
        self.q_optimizer.step()

        # Update target Q network
        update_exponential_moving_average(self.q_target, self.qf, self.alpha)

        # Update policy
        exp_adv = torch.exp(self.beta * adv.detach()).clamp(max=EXP_ADV_MAX)
        policy_out = self.policy(observations)
        if isinstance(policy_out, torch.distributions.Distribution):
            bc_losses = -policy_out.log_prob(actions)
        elif torch.is_tensor(policy_out):
            assert policy_out.shape == actions.shape
            bc_losses = torch.sum((policy_out - actions)**2, dim=1)
        else:
            raise NotImplementedError
        policy_loss = torch.mean(exp_adv * bc_losses)
        self.policy_optimizer.zero_grad(set_to_none=True)
        policy_loss.backward()
        self.policy_optimizer.step()
        self.policy_lr_schedule.step()


def build_iql(obs_dim=5, act_dim=3):
    return ImplicitQLearning(
        qf=TwinQ(obs_dim, act_dim),
        vf=ValueFunction(obs_dim),
        policy=GaussianPolicy(obs_dim, act_dim),
        optimizer_factory=partial(torch.optim.Adam, lr=3e-4),
        max_steps=100,
        tau=0.7,
        beta=3.0,
    )


def train(dataset_batches):
    iql = build_iql()
    update = torch.compile(iql.update)
    for batch in dataset_batches:
        update(**batch)
    return iql


def make():
    torch.manual_seed(0)
    obs = torch.randn(6, 5)
    actions = torch.rand(6, 3) * 2 - 1
    next_obs = torch.randn(6, 5)
    rewards = torch.randn(6)
    terminals = torch.tensor([0, 0, 1, 0, 0, 1], dtype=torch.bool)
    return build_iql().update, [(obs, actions, next_obs, rewards, terminals)]
