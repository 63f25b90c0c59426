"""minimalRL DQN epsilon-greedy action: `Qnet.sample_action(obs, epsilon)` runs the Q network, draws `random.random()` and returns either `random.randint(0,1)` or `out.argmax().item()`.

Source: seungeunrho/minimalRL@c8efed8481e3cd40e9739cfde220a55522555b57:dqn.py:42-60
Also: dqn.py main (`epsilon = max(0.01, 0.08 - 0.01*(n_epi/200))`,
`a = q.sample_action(torch.from_numpy(s).float(), epsilon)`).
Kept: Qnet verbatim.
Simplified: no gym; the method is compiled with `q.sample_action = torch.compile(q.sample_action)`;
the input sets use epsilon 1.0 and 0.0 so both sides of `coin < epsilon` run.
"""
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

class Qnet(nn.Module):
    def __init__(self):
        super(Qnet, self).__init__()
        self.fc1 = nn.Linear(4, 128)
        self.fc2 = nn.Linear(128, 128)
        self.fc3 = nn.Linear(128, 2)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x
      
    def sample_action(self, obs, epsilon):
        out = self.forward(obs)
        coin = random.random()
        if coin < epsilon:
            return random.randint(0,1)
        else : 
            return out.argmax().item()

def act(q, s, n_epi):
    epsilon = max(0.01, 0.08 - 0.01*(n_epi/200)) #Linear annealing from 8% to 1%
    return q.sample_action(torch.from_numpy(s).float(), epsilon)


def main():
    q = Qnet()
    q.sample_action = torch.compile(q.sample_action)
    s = np.zeros(4)
    for n_epi in range(3):
        a = act(q, s, n_epi)
        s = s + 0.01 * (2 * a - 1)


def make():
    torch.manual_seed(0)
    q = Qnet()
    obs = torch.from_numpy(np.random.RandomState(0).randn(4)).float()
    return q.sample_action, [(obs, 1.0), (obs, 0.0)]
