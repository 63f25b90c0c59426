"""CleanRL PPO-LSTM agent: get_states loops over time steps, resetting the LSTM state where `done` is set, then samples a Categorical action.

Source: vwxyzjn/cleanrl@fe8d8a03c41a7ef5b523e2e354bd01c363e786bb:cleanrl/ppo_atari_lstm.py:111-170
Also: cleanrl/ppo_atari_lstm.py:228-248 (the rollout call with next_lstm_state).
Kept: layer_init, the Nature-CNN trunk on 84x84 frames, nn.LSTM(512, 128)
with its named_parameters init, get_states' per-step zip loop with the
`(1.0 - d).view(1, -1, 1) * lstm_state[...]` reset, get_value and
get_action_and_value with Categorical(logits=...).
Simplified: `envs` is a namespace with single_action_space.n = 4; no
gym/tyro/tensorboard; the agent's method is compiled directly.
"""
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, envs):
        super().__init__()
        self.network = nn.Sequential(
            layer_init(nn.Conv2d(1, 32, 8, stride=4)),
            nn.ReLU(),
            layer_init(nn.Conv2d(32, 64, 4, stride=2)),
            nn.ReLU(),
            layer_init(nn.Conv2d(64, 64, 3, stride=1)),
            nn.ReLU(),
            nn.Flatten(),
            layer_init(nn.Linear(64 * 7 * 7, 512)),
            nn.ReLU(),
        )
        self.lstm = nn.LSTM(512, 128)
        for name, param in self.lstm.named_parameters():
            if "bias" in name:
                nn.init.constant_(param, 0)
            elif "weight" in name:
                nn.init.orthogonal_(param, 1.0)
        self.actor = layer_init(nn.Linear(128, envs.single_action_space.n), std=0.01)
        self.critic = layer_init(nn.Linear(128, 1), std=1)

    def get_states(self, x, lstm_state, done):
        hidden = self.network(x / 255.0)

        # LSTM logic
        batch_size = lstm_state[0].shape[1]
        hidden = hidden.reshape((-1, batch_size, self.lstm.input_size))
        done = done.reshape((-1, batch_size))
        new_hidden = []
        for h, d in zip(hidden, done):
            h, lstm_state = self.lstm(
                h.unsqueeze(0),
                (
                    (1.0 - d).view(1, -1, 1) * lstm_state[0],
                    (1.0 - d).view(1, -1, 1) * lstm_state[1],
                ),
            )
            new_hidden += [h]
        new_hidden = torch.flatten(torch.cat(new_hidden), 0, 1)
        return new_hidden, lstm_state

    def get_value(self, x, lstm_state, done):
        hidden, _ = self.get_states(x, lstm_state, done)
        return self.critic(hidden)

    def get_action_and_value(self, x, lstm_state, done, action=None):
        hidden, lstm_state = self.get_states(x, lstm_state, done)
        logits = self.actor(hidden)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(hidden), lstm_state


envs = SimpleNamespace(single_action_space=SimpleNamespace(n=4))
agent = Agent(envs)
get_action_and_value = torch.compile(agent.get_action_and_value)


def make():
    torch.manual_seed(0)
    agent = Agent(envs)
    num_envs = 2
    next_lstm_state = (torch.zeros(agent.lstm.num_layers, num_envs, agent.lstm.hidden_size),
                       torch.zeros(agent.lstm.num_layers, num_envs, agent.lstm.hidden_size))
    next_obs = torch.randint(0, 256, (num_envs, 1, 84, 84)).float()
    next_done = torch.tensor([0.0, 1.0])
    # minibatch replay: 2 steps x 2 envs, with given actions
    mb_obs = torch.randint(0, 256, (2 * num_envs, 1, 84, 84)).float()
    mb_done = torch.tensor([0.0, 0.0, 1.0, 0.0])
    mb_actions = torch.tensor([0, 3, 1, 2])
    return agent.get_action_and_value, [
        (next_obs, next_lstm_state, next_done),
        (mb_obs, next_lstm_state, mb_done, mb_actions),
    ]
