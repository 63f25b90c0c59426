"""PyMARL QMIX mixer: state-conditioned hypernetwork weights mix per-agent Q values.

Source: oxwhirl/pymarl@023de7ed5bc2840257e9a0dac8d33e0f3919fd4a:src/modules/mixers/qmix.py:7-60
Kept: the args plumbing (getattr(args, "hypernet_layers", 1) choosing one or two
layer hypernets, int(np.prod(args.state_shape))), the forward's reshapes,
th.abs monotonic weights, bmm mixing, V(s) bias, and the (bs, -1, 1) return.
Simplified: 3 agents, state of 10, embed 8; an args namespace instead of sacred config.
"""
from types import SimpleNamespace

import numpy as np
import torch as th
import torch.nn as nn
import torch.nn.functional as F


class QMixer(nn.Module):
    def __init__(self, args):
        super(QMixer, self).__init__()

        self.args = args
        self.n_agents = args.n_agents
        self.state_dim = int(np.prod(args.state_shape))

        self.embed_dim = args.mixing_embed_dim

        if getattr(args, "hypernet_layers", 1) == 1:
            self.hyper_w_1 = nn.Linear(self.state_dim, self.embed_dim * self.n_agents)
            self.hyper_w_final = nn.Linear(self.state_dim, self.embed_dim)
        elif getattr(args, "hypernet_layers", 1) == 2:
            hypernet_embed = self.args.hypernet_embed
            self.hyper_w_1 = nn.Sequential(nn.Linear(self.state_dim, hypernet_embed),
                                           nn.ReLU(),
                                           nn.Linear(hypernet_embed, self.embed_dim * self.n_agents))
            self.hyper_w_final = nn.Sequential(nn.Linear(self.state_dim, hypernet_embed),
                                               nn.ReLU(),
                                               nn.Linear(hypernet_embed, self.embed_dim))
        elif getattr(args, "hypernet_layers", 1) > 2:
            raise Exception("Sorry >2 hypernet layers is not implemented!")
        else:
            raise Exception("Error setting number of hypernet layers.")

        # State dependent bias for hidden layer
        self.hyper_b_1 = nn.Linear(self.state_dim, self.embed_dim)

        # V(s) instead of a bias for the last layers
        self.V = nn.Sequential(nn.Linear(self.state_dim, self.embed_dim),
                               nn.ReLU(),
                               nn.Linear(self.embed_dim, 1))

    def forward(self, agent_qs, states):
        bs = agent_qs.size(0)
        states = states.reshape(-1, self.state_dim)
        agent_qs = agent_qs.view(-1, 1, self.n_agents)
        # First layer
        w1 = th.abs(self.hyper_w_1(states))
        b1 = self.hyper_b_1(states)
        w1 = w1.view(-1, self.n_agents, self.embed_dim)
        b1 = b1.view(-1, 1, self.embed_dim)
        hidden = F.elu(th.bmm(agent_qs, w1) + b1)
        # Second layer
        w_final = th.abs(self.hyper_w_final(states))
        w_final = w_final.view(-1, self.embed_dim, 1)
        # State-dependent bias
        v = self.V(states).view(-1, 1, 1)
        # Compute final output
        y = th.bmm(hidden, w_final) + v
        # Reshape and return
        q_tot = y.view(bs, -1, 1)
        return q_tot


def make_args():
    return SimpleNamespace(n_agents=3, state_shape=(10,), mixing_embed_dim=8,
                           hypernet_layers=2, hypernet_embed=16)


def build_mixer(args):
    mixer = QMixer(args)
    return th.compile(mixer)


def make():
    th.manual_seed(0)
    args = make_args()
    mixer = QMixer(args)
    # (batch, time, agents) chosen-action Q values and (batch, time, state)
    qs = th.randn(2, 5, 3)
    states = th.randn(2, 5, 10)
    return mixer, [(qs, states), (qs[:, :1], states[:, :1])]
