"""Pearl DQN act: the greedy action is `available_action_space.actions[torch.argmax(q_values)]` (a Python list indexed by a 0-d tensor), then EGreedyExploration draws `random.random()` and may sample a masked action via `mask.numpy()` and the Gym Discrete space.

Source: facebookresearch/Pearl@01c16fd482ade4e6c5d3bc7a83f3c7065f9afa8d:pearl/policy_learners/exploration_modules/common/epsilon_greedy_exploration.py:24-90
Also: pearl/policy_learners/sequential_decision_making/deep_td_learning.py (act),
pearl/utils/instantiations/spaces/discrete.py@066f41f45bd2fb992abf4046d207ec4f5e6e8a00:34-110 and
discrete_action.py@1653c9cf4fd5081f6f666df555ecc80007c5b4b2:34-100 (DiscreteSpace/DiscreteActionSpace),
pearl/neural_networks/sequential_decision_making/q_value_networks.py (VanillaQValueNetwork.get_q_values),
pearl/utils/functional_utils/learning/extend_state_feature.py,
pearl/action_representation_modules/one_hot_action_representation_module.py.
Kept: EGreedyExploration.__init__/act verbatim (epsilon schedule, time_step
counter, isinstance checks), DeepTDLearning.act verbatim, the discrete spaces'
validation/actions/actions_batch/sample, the one-hot action representation,
VanillaQValueNetwork.get_q_values verbatim (state repeated per action by
extend_state_feature_by_available_action_space before the cat).
Simplified: gymnasium's Discrete is a local class with the same sample(mask)
logic on a seeded numpy Generator; the Q network is a 2-layer MLP on
[state, action]; no replay buffer or learning.
"""
import random
from enum import Enum
from typing import Any, List, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor


class Discrete:
    """Stand-in for gymnasium.spaces.Discrete (sample with an optional int8 mask)."""

    def __init__(self, n: int, seed: Optional[int] = None, start: int = 0) -> None:
        self.n = n
        self.start = start
        self.np_random = np.random.default_rng(seed)

    def sample(self, mask=None):
        if mask is not None:
            valid_action_mask = mask == 1
            if np.any(valid_action_mask):
                return self.start + self.np_random.choice(np.where(valid_action_mask)[0])
            return self.start
        return self.start + self.np_random.integers(self.n)


def reshape_to_1d_tensor(x: Tensor) -> Tensor:
    if x.ndim == 0:
        return x.unsqueeze(0)
    if x.ndim == 2 and x.shape[0] == 1:
        return x.squeeze(0)
    return x


class DiscreteSpace:
    def __init__(self, elements: list[Tensor], seed: int | None = None) -> None:
        if len(elements) == 0:
            raise ValueError("`DiscreteSpace` requires at least one element.")
        self._set_validated_elements(elements=elements)  # sets self.elements
        self._gym_space = Discrete(n=len(elements), seed=seed, start=0)

    def _set_validated_elements(self, elements: list[Tensor]) -> None:
        validated = []
        expected_shape = elements[0].shape
        for e in elements:
            if e.shape != expected_shape:
                raise ValueError(
                    f"All elements must have the same shape. Expected {expected_shape}, "
                    f"but got {e.shape}."
                )
            validated.append(e)
        self.elements = validated

    @property
    def n(self) -> int:
        """Returns the number of elements in this space."""
        return int(self._gym_space.n)

    @property
    def shape(self) -> torch.Size:
        return self.elements[0].shape

    def sample(self, mask: Tensor | None = None) -> Tensor:
        mask_np = mask.numpy().astype(int) if mask is not None else None
        idx = self._gym_space.sample(mask=mask_np)
        return self.elements[idx]


class DiscreteActionSpace(DiscreteSpace):
    def __init__(self, actions: list[Tensor], seed: int | None = None) -> None:
        super().__init__(elements=actions, seed=seed)

    def _set_validated_elements(self, elements: list[Tensor]) -> None:
        validated_actions = []
        expected_shape = reshape_to_1d_tensor(elements[0]).shape
        for action in elements:
            action = reshape_to_1d_tensor(action)
            if action.shape != expected_shape:
                raise ValueError(
                    f"All actions must have the same shape. Expected {expected_shape}, "
                    f"but got {action.shape}."
                )
            validated_actions.append(action)
        self.elements = validated_actions

    @property
    def actions(self) -> list[Tensor]:
        return self.elements

    @property
    def actions_batch(self) -> Tensor:
        return torch.stack(self.actions, dim=0)


class ExplorationType(Enum):
    UNIFORM = 0


class UniformExplorationBase:
    def __init__(self) -> None:
        self.exploration_type = ExplorationType.UNIFORM


class EGreedyExploration(UniformExplorationBase):
    """
    epsilon Greedy exploration module.
    """

    def __init__(
        self,
        epsilon: float,
        start_epsilon: Optional[float] = None,
        end_epsilon: Optional[float] = None,
        warmup_steps: Optional[int] = None,
    ) -> None:
        super().__init__()
        self.start_epsilon = start_epsilon
        self.end_epsilon = end_epsilon
        self.warmup_steps = warmup_steps
        self.time_step = 0
        self._epsilon_scheduling: bool = (
            self.start_epsilon is not None
            and self.end_epsilon is not None
            and self.warmup_steps is not None
        )
        if self._epsilon_scheduling:
            assert self.start_epsilon is not None
            self.curr_epsilon: float = self.start_epsilon
        else:
            self.curr_epsilon = epsilon

    def act(
        self,
        subjective_state: Tensor,
        action_space: DiscreteActionSpace,
        exploit_action: Tensor | None,
        values: torch.Tensor | None = None,
        action_availability_mask: torch.Tensor | None = None,
        representation: torch.nn.Module | None = None,
    ) -> Tensor:
        if self._epsilon_scheduling:
            assert self.warmup_steps is not None
            if self.time_step < self.warmup_steps:
                assert self.warmup_steps is not None
                frac = self.time_step / self.warmup_steps
                assert self.start_epsilon is not None
                assert self.end_epsilon is not None
                self.curr_epsilon = (
                    self.start_epsilon + (self.end_epsilon - self.start_epsilon) * frac
                )
        self.time_step += 1
        if exploit_action is None:
            raise ValueError(
                "exploit_action cannot be None for epsilon-greedy exploration"
            )
        if not isinstance(action_space, DiscreteActionSpace):
            raise TypeError("action space must be discrete")
        if random.random() < self.curr_epsilon:
            return action_space.sample(action_availability_mask).to(
                exploit_action.device
            )
        else:
            return exploit_action


class OneHotActionTensorRepresentationModule(torch.nn.Module):
    def __init__(self, max_number_actions: int) -> None:
        super().__init__()
        self._max_number_actions = max_number_actions

    def forward(self, x: Tensor) -> Tensor:
        return F.one_hot(x.long(), num_classes=self._max_number_actions).squeeze(dim=-2).float()


def extend_state_feature_by_available_action_space(
    state_batch: torch.Tensor,
    curr_available_actions_batch: torch.Tensor,
) -> torch.Tensor:
    state_repeated_batch = torch.repeat_interleave(
        state_batch.unsqueeze(1),
        curr_available_actions_batch.shape[-2],  # num of available actions
        dim=1,
    )  # (batch_size x available_action_space_size x state_dim)
    return state_repeated_batch


class VanillaQValueNetwork(torch.nn.Module):
    def __init__(self, state_dim: int, action_dim: int, hidden_dims: List[int]) -> None:
        super().__init__()
        layers: List[torch.nn.Module] = []
        last = state_dim + action_dim
        for h in hidden_dims:
            layers += [torch.nn.Linear(last, h), torch.nn.ReLU()]
            last = h
        layers.append(torch.nn.Linear(last, 1))
        self._model = torch.nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        return self._model(x)

    def get_q_values(
        self,
        state_batch: Tensor,  # (batch_size, state_dim)
        # (batch_size, number of query actions, action_dim) or (batch_size, action_dim)
        action_batch: Tensor,
        curr_available_actions_batch: Tensor | None = None,
    ) -> Tensor:
        assert len(state_batch.shape) == 2
        assert len(action_batch.shape) == 3 or len(action_batch.shape) == 2
        if len(action_batch.shape) == 2:
            extended_action_batch = action_batch.unsqueeze(1)
        else:
            extended_action_batch = action_batch
        state_batch = extend_state_feature_by_available_action_space(
            state_batch, extended_action_batch
        )  # (batch_size, number_of_actions_to_query, state_dim)
        x = torch.cat(
            [state_batch, extended_action_batch], dim=-1
        )  # (batch_size, number_of_actions_to_query, (state_dim + action_dim))
        q_values = self.forward(x).squeeze(
            -1
        )  # (batch_size, number_of_actions_to_query)
        return q_values if len(action_batch.shape) == 3 else q_values.squeeze(-1)


class DeepQLearning(torch.nn.Module):
    def __init__(self, state_dim: int, action_count: int, exploration_module: Any) -> None:
        super().__init__()
        self.action_representation_module = OneHotActionTensorRepresentationModule(action_count)
        self._Q = VanillaQValueNetwork(state_dim, action_count, [16, 16])
        self.exploration_module = exploration_module

    def act(
        self,
        subjective_state: Tensor,
        available_action_space: DiscreteActionSpace,
        exploit: bool = False,
    ) -> Tensor:
        # Fix the available action space.
        assert isinstance(available_action_space, DiscreteActionSpace)
        with torch.no_grad():
            batched_actions_representation = self.action_representation_module(
                available_action_space.actions_batch.to(subjective_state)
            ).unsqueeze(0)  # (1 x number of actions x action_dim)

            q_values = self._Q.get_q_values(
                subjective_state.unsqueeze(0),  # (1 x state_dim)
                batched_actions_representation,
            )  # (1 x number of actions)
            # this does a forward pass since all avaialble
            # actions are already stacked together
            q_values = q_values.squeeze(0)  # (number of actions)
            exploit_action_index = torch.argmax(q_values)
            exploit_action = available_action_space.actions[exploit_action_index]

        if exploit:
            return exploit_action

        assert self.exploration_module is not None
        return self.exploration_module.act(
            subjective_state=subjective_state,
            action_space=available_action_space,
            exploit_action=exploit_action,
            values=q_values,
        )


def build_learner() -> DeepQLearning:
    return DeepQLearning(
        state_dim=4,
        action_count=3,
        exploration_module=EGreedyExploration(0.05, start_epsilon=1.0, end_epsilon=0.05, warmup_steps=100),
    )


learner = build_learner()
act = torch.compile(learner.act)


def make():
    torch.manual_seed(0)
    policy_learner = build_learner()
    action_space = DiscreteActionSpace(actions=list(torch.arange(3).view(-1, 1)), seed=0)
    state = torch.randn(4)
    return policy_learner.act, [(state, action_space), (state, action_space, True)]
