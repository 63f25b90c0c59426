"""skrl CategoricalModel.act: the policy output becomes a torch.distributions.Categorical (logits or probs by a constructor flag), actions are sampled, log-probs taken for sampled or given actions, and `inference` detaches the results.

Source: Toni-SM/skrl@091d46bdde2db4184729257f0421085f73b40804:skrl/models/torch/categorical.py:1-140
Kept: CategoricalModel.__init__ (unnormalized_log_prob flag, _distribution) and
act verbatim including the `_instantiator_net is None` choice and
`taken_actions.view(-1)`; the Policy from the class docstring.
Simplified: the base Model keeps only device/num_observations/num_actions and
`_instantiator_net = None`; gym spaces are plain shapes.
"""
from typing import Optional, Sequence

import torch
import torch.nn as nn
from torch.distributions import Categorical


class Model(nn.Module):
    def __init__(self, observation_space, action_space, device="cpu") -> None:
        super().__init__()
        self.observation_space = observation_space
        self.action_space = action_space
        self.device = torch.device(device)
        self.num_observations = observation_space[0]
        self.num_actions = action_space
        self._instantiator_net = None

    def _get_instantiator_output(self, states, taken_actions):
        raise NotImplementedError


class CategoricalModel(Model):
    def __init__(self, observation_space, action_space, device="cpu", unnormalized_log_prob: bool = True) -> None:
        super(CategoricalModel, self).__init__(observation_space, action_space, device)

        self._unnormalized_log_prob = unnormalized_log_prob

        self._distribution = None

    def act(self,
            states: torch.Tensor,
            taken_actions: Optional[torch.Tensor] = None,
            inference: bool = False,
            role: str = "") -> Sequence[torch.Tensor]:
        # map from states/observations to normalized probabilities or unnormalized log probabilities
        if self._instantiator_net is None:
            output = self.compute(states.to(self.device),
                                  taken_actions.to(self.device) if taken_actions is not None else taken_actions)
        else:
            output = self._get_instantiator_output(states.to(self.device), \
                taken_actions.to(self.device) if taken_actions is not None else taken_actions)

        # unnormalized log probabilities
        if self._unnormalized_log_prob:
            self._distribution = Categorical(logits=output)
        # normalized probabilities
        else:
            self._distribution = Categorical(probs=output)

        # actions and log of the probability density function
        actions = self._distribution.sample()
        log_prob = self._distribution.log_prob(actions if taken_actions is None else taken_actions.view(-1))

        if inference:
            return actions.unsqueeze(-1).detach(), log_prob.unsqueeze(-1).detach(), output.detach()
        return actions.unsqueeze(-1), log_prob.unsqueeze(-1), output

    def distribution(self) -> torch.distributions.Categorical:
        return self._distribution


class Policy(CategoricalModel):
    def __init__(self, observation_space, action_space, device="cpu", unnormalized_log_prob=True):
        super().__init__(observation_space, action_space, device, unnormalized_log_prob)

        self.net = nn.Sequential(nn.Linear(self.num_observations, 32),
                                 nn.ELU(),
                                 nn.Linear(32, 32),
                                 nn.ELU(),
                                 nn.Linear(32, self.num_actions))

    def compute(self, states, taken_actions):
        return self.net(states)


policy = Policy((4,), 2)
act = torch.compile(policy.act)


def make():
    torch.manual_seed(0)
    p = Policy((4,), 2)
    states = torch.randn(5, 4)
    taken = torch.tensor([[0], [1], [1], [0], [1]])
    return p.act, [(states,), (states, taken), (states, None, True)]
