"""DeepRL PPO network: GaussianActorCriticNet.forward converts the observation with the library's
`tensor()` helper (isinstance check, np.asarray + torch.from_numpy onto Config.DEVICE), builds a
torch.distributions.Normal and samples an action only when none is given; returns a dict.

Source: ShangtongZhang/DeepRL@c0968b5c046314af09944843cdf06f4100c6bb95:deep_rl/network/network_heads.py:173-211,
deep_rl/network/network_bodies.py:50-82, deep_rl/network/network_utils.py:15-27,
deep_rl/utils/torch_utils.py:19-24, deep_rl/utils/config.py:11-12, examples.py:505-507,
deep_rl/agent/PPO_agent.py:34,77 (the two call forms)
Kept: BaseNet, layer_init, FCBody, DummyBody, GaussianActorCriticNet and tensor() as written;
the ppo_continuous network_fn (tanh FCBody actor and critic bodies on a DummyBody phi).
Simplified: Config reduced to its DEVICE class attribute; state_dim 6, action_dim 2, hidden (64, 64);
the rollout call gets a float64 numpy batch (the normalizer's output), the update call tensors.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Config:
    DEVICE = torch.device('cpu')


def tensor(x):
    if isinstance(x, torch.Tensor):
        return x
    x = np.asarray(x, dtype=np.float32)
    x = torch.from_numpy(x).to(Config.DEVICE)
    return x


class BaseNet:
    def __init__(self):
        pass

    def reset_noise(self):
        pass


def layer_init(layer, w_scale=1.0):
    nn.init.orthogonal_(layer.weight.data)
    layer.weight.data.mul_(w_scale)
    nn.init.constant_(layer.bias.data, 0)
    return layer


class FCBody(nn.Module):
    def __init__(self, state_dim, hidden_units=(64, 64), gate=F.relu, noisy_linear=False):
        super(FCBody, self).__init__()
        dims = (state_dim,) + hidden_units
        self.layers = nn.ModuleList(
            [layer_init(nn.Linear(dim_in, dim_out)) for dim_in, dim_out in zip(dims[:-1], dims[1:])])

        self.gate = gate
        self.feature_dim = dims[-1]
        self.noisy_linear = noisy_linear

    def reset_noise(self):
        if self.noisy_linear:
            for layer in self.layers:
                layer.reset_noise()

    def forward(self, x):
        for layer in self.layers:
            x = self.gate(layer(x))
        return x


class DummyBody(nn.Module):
    def __init__(self, state_dim):
        super(DummyBody, self).__init__()
        self.feature_dim = state_dim

    def forward(self, x):
        return x


class GaussianActorCriticNet(nn.Module, BaseNet):
    def __init__(self,
                 state_dim,
                 action_dim,
                 phi_body=None,
                 actor_body=None,
                 critic_body=None):
        super(GaussianActorCriticNet, self).__init__()
        if phi_body is None: phi_body = DummyBody(state_dim)
        if actor_body is None: actor_body = DummyBody(phi_body.feature_dim)
        if critic_body is None: critic_body = DummyBody(phi_body.feature_dim)
        self.phi_body = phi_body
        self.actor_body = actor_body
        self.critic_body = critic_body
        self.fc_action = layer_init(nn.Linear(actor_body.feature_dim, action_dim), 1e-3)
        self.fc_critic = layer_init(nn.Linear(critic_body.feature_dim, 1), 1e-3)
        self.std = nn.Parameter(torch.zeros(action_dim))
        self.phi_params = list(self.phi_body.parameters())

        self.actor_params = list(self.actor_body.parameters()) + list(self.fc_action.parameters()) + self.phi_params
        self.actor_params.append(self.std)
        self.critic_params = list(self.critic_body.parameters()) + list(self.fc_critic.parameters()) + self.phi_params

        self.to(Config.DEVICE)

    def forward(self, obs, action=None):
        obs = tensor(obs)
        phi = self.phi_body(obs)
        phi_a = self.actor_body(phi)
        phi_v = self.critic_body(phi)
        mean = torch.tanh(self.fc_action(phi_a))
        v = self.fc_critic(phi_v)
        dist = torch.distributions.Normal(mean, F.softplus(self.std))
        if action is None:
            action = dist.sample()
        log_prob = dist.log_prob(action).sum(-1).unsqueeze(-1)
        entropy = dist.entropy().sum(-1).unsqueeze(-1)
        return {'action': action,
                'log_pi_a': log_prob,
                'entropy': entropy,
                'mean': mean,
                'v': v}


class PPOConfig:
    state_dim = 6
    action_dim = 2


config = PPOConfig()
config.network_fn = lambda: GaussianActorCriticNet(
    config.state_dim, config.action_dim, actor_body=FCBody(config.state_dim, gate=torch.tanh),
    critic_body=FCBody(config.state_dim, gate=torch.tanh))

network = torch.compile(config.network_fn())


def make():
    torch.manual_seed(0)
    net = config.network_fn()
    rng = np.random.RandomState(0)
    states_np = rng.randn(4, 6)  # normalized observations from the vectorised envs (float64)
    states = torch.randn(4, 6)
    actions = torch.randn(4, 2)
    return net, [(states_np,), (states, actions)]
