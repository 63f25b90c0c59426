"""pytorch/examples actor-critic: `select_action` converts a numpy state with `torch.from_numpy`, samples from a `Categorical`, appends a `SavedAction` namedtuple to the module's list and returns `action.item()`.

Source: pytorch/examples@02d5761dfd12e36d9df6a2054820831e3d558712:reinforcement_learning/actor_critic.py:1-84
Kept: SavedAction, the Policy module with its saved_actions/rewards lists,
the module-level model/optimizer/eps, select_action over the global model.
Simplified: no gym environment, argparse or training loop; the CartPole
state is a float64 numpy array of 4 values; hidden size 16.
"""
from argparse import Namespace
from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

args = Namespace(gamma=0.99, seed=543, render=False, log_interval=10)

SavedAction = namedtuple('SavedAction', ['log_prob', 'value'])


class Policy(nn.Module):
    """
    implements both actor and critic in one model
    """
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 16)

        # actor's layer
        self.action_head = nn.Linear(16, 2)

        # critic's layer
        self.value_head = nn.Linear(16, 1)

        # action & reward buffer
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        """
        forward of both actor and critic
        """
        x = F.relu(self.affine1(x))

        # actor: choses action to take from state s_t
        # by returning probability of each action
        action_prob = F.softmax(self.action_head(x), dim=-1)

        # critic: evaluates being in the state s_t
        state_values = self.value_head(x)

        # return values for both actor and critic as a tupel of 2 values
        return action_prob, state_values


model = Policy()
optimizer = optim.Adam(model.parameters(), lr=3e-2)
eps = np.finfo(np.float32).eps.item()


def select_action(state):
    state = torch.from_numpy(state).float()
    probs, state_value = model(state)

    # create a categorical distribution over the list of probabilities of actions
    m = Categorical(probs)

    # and sample an action using the distribution
    action = m.sample()

    # save to action buffer
    model.saved_actions.append(SavedAction(m.log_prob(action), state_value))

    # the action to take (left or right)
    return action.item()


fast_select_action = torch.compile(select_action)


def make():
    global model, optimizer
    torch.manual_seed(0)
    model = Policy()
    optimizer = optim.Adam(model.parameters(), lr=3e-2)
    rng = np.random.default_rng(0)
    return select_action, [(rng.normal(size=4),), (np.zeros(4),)]
