"""skrl GaussianMixin.act: per-role dict lookups with conditional expressions choose log-std clamping and action clipping, then a torch.distributions.Normal is built from the policy output and sampled with rsample().

Source: Toni-SM/skrl@0484767248f17397581110be161deabbedc99f5d:skrl/models/torch/gaussian.py:9-185
Kept: GaussianMixin.__init__ (role-keyed dicts, clip_actions from the action
space's low/high, the torch version backward-compatibility tuple, the reduction
choice) and act verbatim; the Policy from the class docstring (net + log_std
parameter, compute returning a tuple); Model.__init__'s num_observations/
num_actions/device plumbing.
Simplified: gym/gymnasium spaces are a local Box class (the isinstance test
checks it instead of gym.Space); Model is a bare nn.Module base.
"""
from typing import Optional, Sequence

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Normal


class Box:
    def __init__(self, low, high, shape):
        self.low = np.full(shape, low, dtype=np.float32)
        self.high = np.full(shape, high, dtype=np.float32)
        self.shape = shape


class Model(nn.Module):
    def __init__(self, observation_space, action_space, device="cpu"):
        super().__init__()
        self.observation_space = observation_space
        self.action_space = action_space
        self.device = torch.device(device)
        self.num_observations = int(np.prod(observation_space.shape))
        self.num_actions = int(np.prod(action_space.shape))

    def forward(self, states, taken_actions=None, role=""):
        return self.act(states, taken_actions, role)


class GaussianMixin:
    def __init__(self,
                 clip_actions: bool = False,
                 clip_log_std: bool = True,
                 min_log_std: float = -20,
                 max_log_std: float = 2,
                 reduction: str = "sum",
                 role: str = "") -> None:
        if not hasattr(self, "_g_clip_actions"):
            self._g_clip_actions = {}
        self._g_clip_actions[role] = clip_actions and issubclass(type(self.action_space), Box)

        if self._g_clip_actions[role]:
            self.clip_actions_min = torch.tensor(self.action_space.low, device=self.device, dtype=torch.float32)
            self.clip_actions_max = torch.tensor(self.action_space.high, device=self.device, dtype=torch.float32)

            # backward compatibility: torch < 1.9 clamp method does not support tensors
            self._backward_compatibility = tuple(map(int, (torch.__version__.split(".")[:2]))) < (1, 9)

        if not hasattr(self, "_g_clip_log_std"):
            self._g_clip_log_std = {}
        self._g_clip_log_std[role] = clip_log_std
        if not hasattr(self, "_g_log_std_min"):
            self._g_log_std_min = {}
        self._g_log_std_min[role] = min_log_std
        if not hasattr(self, "_g_log_std_max"):
            self._g_log_std_max = {}
        self._g_log_std_max[role] = max_log_std

        if not hasattr(self, "_g_log_std"):
            self._g_log_std = {}
        self._g_log_std[role] = None
        if not hasattr(self, "_g_num_samples"):
            self._g_num_samples = {}
        self._g_num_samples[role] = None
        if not hasattr(self, "_g_distribution"):
            self._g_distribution = {}
        self._g_distribution[role] = None

        if reduction not in ["mean", "sum", "prod", "none"]:
            raise ValueError("reduction must be one of 'mean', 'sum', 'prod' or 'none'")
        if not hasattr(self, "_g_reduction"):
            self._g_reduction = {}
        self._g_reduction[role] = torch.mean if reduction == "mean" else torch.sum if reduction == "sum" \
            else torch.prod if reduction == "prod" else None

    def act(self,
            states: torch.Tensor,
            taken_actions: Optional[torch.Tensor] = None,
            role: str = "") -> Sequence[torch.Tensor]:
        # map from states/observations to mean actions and log standard deviations
        actions_mean, log_std = self.compute(states.to(self.device),
                                             taken_actions.to(self.device) if taken_actions is not None else taken_actions, role)

        # clamp log standard deviations
        if self._g_clip_log_std[role] if role in self._g_clip_log_std else self._g_clip_log_std[""]:
            log_std = torch.clamp(log_std,
                                  self._g_log_std_min[role] if role in self._g_log_std_min else self._g_log_std_min[""],
                                  self._g_log_std_max[role] if role in self._g_log_std_max else self._g_log_std_max[""])

        self._g_log_std[role] = log_std
        self._g_num_samples[role] = actions_mean.shape[0]

        # distribution
        self._g_distribution[role] = Normal(actions_mean, log_std.exp())

        # sample using the reparameterization trick
        actions = self._g_distribution[role].rsample()

        # clip actions
        if self._g_clip_actions[role] if role in self._g_clip_actions else self._g_clip_actions[""]:
            if self._backward_compatibility:
                actions = torch.max(torch.min(actions, self.clip_actions_max), self.clip_actions_min)
            else:
                actions = torch.clamp(actions, min=self.clip_actions_min, max=self.clip_actions_max)

        # log of the probability density function
        log_prob = self._g_distribution[role].log_prob(actions if taken_actions is None else taken_actions)
        reduction = self._g_reduction[role] if role in self._g_reduction else self._g_reduction[""]
        if reduction is not None:
            log_prob = reduction(log_prob, dim=-1)
        if log_prob.dim() != actions.dim():
            log_prob = log_prob.unsqueeze(-1)

        return actions, log_prob, actions_mean


class Policy(GaussianMixin, Model):
    def __init__(self, observation_space, action_space, device="cpu",
                 clip_actions=False, clip_log_std=True, min_log_std=-20, max_log_std=2, reduction="sum"):
        Model.__init__(self, observation_space, action_space, device)
        GaussianMixin.__init__(self, clip_actions, clip_log_std, min_log_std, max_log_std, reduction)

        self.net = nn.Sequential(nn.Linear(self.num_observations, 32),
                                 nn.ELU(),
                                 nn.Linear(32, 32),
                                 nn.ELU(),
                                 nn.Linear(32, self.num_actions))
        self.log_std_parameter = nn.Parameter(torch.zeros(self.num_actions))

    def compute(self, states, taken_actions, role):
        return self.net(states), self.log_std_parameter


def build_policy():
    return Policy(Box(-10.0, 10.0, (6,)), Box(-1.0, 1.0, (2,)), clip_actions=True)


policy = build_policy()
policy_act = torch.compile(policy.act)


def make():
    torch.manual_seed(0)
    p = build_policy()
    states = torch.randn(4, 6)
    taken = torch.rand(4, 2) * 2 - 1
    return p.act, [(states,), (states, taken), (states, None, "policy")]
