"""DeepRL option-critic: OptionCriticAgent.sample_option builds epsilon-greedy option probabilities with
scatter_, marks the previous option with advanced-index assignment `mask[self.worker_index, prev_option] = 1`,
samples two Categorical distributions and picks per worker with torch.where on a uint8 (`.byte()`)
"is initial state" tensor; epsilon is a Python float from a LinearSchedule.

Source: ShangtongZhang/DeepRL@c0968b5c046314af09944843cdf06f4100c6bb95:deep_rl/agent/OptionCritic_agent.py:12-51,
deep_rl/network/network_heads.py:105-127, deep_rl/network/network_bodies.py:50-73,
deep_rl/network/network_utils.py:15-27, deep_rl/utils/torch_utils.py:19-28, deep_rl/utils/schedule.py:15-32,
examples.py:450-462 (option_critic_feature config)
Kept: sample_option verbatim; OptionCriticAgent.__init__'s worker_index / is_initial_states /
prev_options set-up; OptionCriticNet, FCBody, layer_init, tensor(), LinearSchedule as written.
Simplified: no task, optimizer, target network, logger or rollout storage; the network's prediction
is computed before the compiled call, as step() does; 5 workers, state_dim 4, 3 actions, 2 options.
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


def range_tensor(end):
    return torch.arange(end).long().to(Config.DEVICE)


class LinearSchedule:
    def __init__(self, start, end=None, steps=None):
        if end is None:
            end = start
            steps = 1
        self.inc = (end - start) / float(steps)
        self.current = start
        self.end = end
        if end > start:
            self.bound = min
        else:
            self.bound = max

    def __call__(self, steps=1):
        val = self.current
        self.current = self.bound(self.current + self.inc * steps, self.end)
        return val


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

    def forward(self, x):
        for layer in self.layers:
            x = self.gate(layer(x))
        return x


class OptionCriticNet(nn.Module, BaseNet):
    def __init__(self, body, action_dim, num_options):
        super(OptionCriticNet, self).__init__()
        self.fc_q = layer_init(nn.Linear(body.feature_dim, num_options))
        self.fc_pi = layer_init(nn.Linear(body.feature_dim, num_options * action_dim))
        self.fc_beta = layer_init(nn.Linear(body.feature_dim, num_options))
        self.num_options = num_options
        self.action_dim = action_dim
        self.body = body
        self.to(Config.DEVICE)

    def forward(self, x):
        phi = self.body(tensor(x))
        q = self.fc_q(phi)
        beta = F.sigmoid(self.fc_beta(phi))
        pi = self.fc_pi(phi)
        pi = pi.view(-1, self.num_options, self.action_dim)
        log_pi = F.log_softmax(pi, dim=-1)
        pi = F.softmax(pi, dim=-1)
        return {'q': q,
                'beta': beta,
                'log_pi': log_pi,
                'pi': pi}


class OptionCriticAgent:
    def __init__(self, config):
        self.config = config
        self.network = config.network_fn()

        self.total_steps = 0
        self.worker_index = tensor(np.arange(config.num_workers)).long()

        self.is_initial_states = tensor(np.ones((config.num_workers))).byte()
        self.prev_options = self.is_initial_states.clone().long()

    def sample_option(self, prediction, epsilon, prev_option, is_intial_states):
        with torch.no_grad():
            q_option = prediction['q']
            pi_option = torch.zeros_like(q_option).add(epsilon / q_option.size(1))
            greedy_option = q_option.argmax(dim=-1, keepdim=True)
            prob = 1 - epsilon + epsilon / q_option.size(1)
            prob = torch.zeros_like(pi_option).add(prob)
            pi_option.scatter_(1, greedy_option, prob)

            mask = torch.zeros_like(q_option)
            mask[self.worker_index, prev_option] = 1
            beta = prediction['beta']
            pi_hat_option = (1 - beta) * mask + beta * pi_option

            dist = torch.distributions.Categorical(probs=pi_option)
            options = dist.sample()
            dist = torch.distributions.Categorical(probs=pi_hat_option)
            options_hat = dist.sample()

            options = torch.where(is_intial_states, options, options_hat)
        return options


class AgentConfig:
    num_workers = 5
    state_dim = 4
    action_dim = 3


def build_config():
    config = AgentConfig()
    config.network_fn = lambda: OptionCriticNet(FCBody(config.state_dim), config.action_dim, num_options=2)
    config.random_option_prob = LinearSchedule(1.0, 0.1, 1e4)
    return config


agent = OptionCriticAgent(build_config())
agent.sample_option = torch.compile(agent.sample_option)


def make():
    torch.manual_seed(0)
    config = build_config()
    ag = OptionCriticAgent(config)
    states = np.random.RandomState(0).randn(5, 4)
    prediction = ag.network(states)
    epsilon = config.random_option_prob(config.num_workers)
    terminals = np.array([0, 1, 0, 0, 1])
    return ag.sample_option, [
        (prediction, epsilon, ag.prev_options, ag.is_initial_states),
        (prediction, 0.3, torch.tensor([0, 1, 1, 0, 1]), tensor(terminals).byte()),
    ]
