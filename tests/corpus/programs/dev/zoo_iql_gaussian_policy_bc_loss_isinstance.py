"""IQL policy extraction: advantage-weighted BC loss dispatching on `isinstance(policy_out, Distribution)`.

Source: gwthomas/IQL-PyTorch@9502a53d3e2fdc86144acd56bdbf4c6ce3eb07f3:src/iql.py:61-72 (policy part of
ImplicitQLearning.update), src/policy.py:12-45 (GaussianPolicy, DeterministicPolicy), src/util.py:25-41 (mlp)
Kept: the exp-advantage weights clamped at EXP_ADV_MAX, the isinstance / torch.is_tensor dispatch with the
shape assert, GaussianPolicy returning a MultivariateNormal with a diagonal scale_tril, mlp() verbatim.
Simplified: the optimizer step and LR schedule are left out; the loss is returned; hidden size 8.
"""
import torch
import torch.nn as nn
from torch.distributions import MultivariateNormal


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


class DeterministicPolicy(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden_dim=8, n_hidden=2):
        super().__init__()
        self.net = mlp([obs_dim, *([hidden_dim] * n_hidden), act_dim],
                       output_activation=nn.Tanh)

    def forward(self, obs):
        return self.net(obs)


@torch.compile
def policy_loss_fn(policy, observations, actions, adv, beta):
    exp_adv = torch.exp(beta * adv.detach()).clamp(max=EXP_ADV_MAX)
    policy_out = policy(observations)
    if isinstance(policy_out, torch.distributions.Distribution):
        bc_losses = -policy_out.log_prob(actions)
    elif torch.is_tensor(policy_out):
        assert policy_out.shape == actions.shape
        bc_losses = torch.sum((policy_out - actions)**2, dim=1)
    else:
        raise NotImplementedError
    policy_loss = torch.mean(exp_adv * bc_losses)
    return policy_loss


def make():
    torch.manual_seed(0)
    obs = torch.randn(6, 5)
    actions = torch.rand(6, 3) * 2 - 1
    adv = torch.randn(6)
    gaussian = GaussianPolicy(5, 3)
    deterministic = DeterministicPolicy(5, 3)
    return policy_loss_fn._torchdynamo_orig_callable, [
        (gaussian, obs, actions, adv, 3.0),
        (deterministic, obs, actions, adv, 3.0),
    ]
