"""Pearl BoltzmannExploration.act: softmax(Q / T) scores from get_scores, optional availability-mask renormalisation, `torch.multinomial` sampling and an embedding lookup of the action rows; a deprecated `exploit_action` argument triggers `warnings.warn(..., DeprecationWarning)` and returns early.

Source: facebookresearch/Pearl@48f1fbbea5d02ba7d22f1bd9a57105399b18e17d:pearl/policy_learners/exploration_modules/common/boltzmann_exploration.py:26-120
Also: pearl/utils/instantiations/spaces/discrete.py and discrete_action.py (n, actions_batch).
Kept: __init__'s temperature check, get_scores and act verbatim (isinstance
asserts, `from warnings import warn`), the spaces' n/actions/actions_batch.
Simplified: gymnasium's Discrete is reduced to its `n`; ScoreExplorationBase is a
bare base class; no compare().
"""
from warnings import warn

import torch


class Discrete:
    def __init__(self, n: int, seed=None, start: int = 0) -> None:
        self.n = n
        self.start = start


class DiscreteSpace:
    def __init__(self, elements, seed=None) -> None:
        if len(elements) == 0:
            raise ValueError("`DiscreteSpace` requires at least one element.")
        self.elements = list(elements)
        self._gym_space = Discrete(n=len(elements), seed=seed, start=0)

    @property
    def n(self) -> int:
        """Returns the number of elements in this space."""
        return int(self._gym_space.n)


class DiscreteActionSpace(DiscreteSpace):
    @property
    def actions(self):
        return self.elements

    @property
    def actions_batch(self) -> torch.Tensor:
        return torch.stack(self.actions, dim=0)


class ScoreExplorationBase:
    def __init__(self) -> None:
        self.exploration_type = "boltzmann"


class BoltzmannExploration(ScoreExplorationBase):
    """Softmax (Boltzmann) exploration: `pi(a|s) = softmax(Q(s, a) / T)`."""

    def __init__(self, temperature: float = 1.0) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(
                f"BoltzmannExploration requires temperature > 0, got {temperature}"
            )
        self.temperature: float = temperature

    def get_scores(
        self,
        subjective_state,
        action_space,
        values: torch.Tensor | None = None,
        exploit_action=None,
        representation: torch.nn.Module | None = None,
    ):
        if exploit_action is not None:
            raise ValueError("exploit_action shouldn't be used. use `values` instead")
        assert isinstance(action_space, DiscreteSpace)
        assert values is not None
        return torch.softmax(
            values.reshape(-1, action_space.n) / self.temperature, dim=-1
        )

    def act(
        self,
        subjective_state,
        action_space,
        values: torch.Tensor | None = None,
        action_availability_mask: torch.Tensor | None = None,
        exploit_action=None,
        representation: torch.nn.Module | None = None,
    ):
        if exploit_action is not None:
            warn(
                "exploit_action shouldn't be used. use `values` instead",
                DeprecationWarning,
            )
            return exploit_action

        assert isinstance(action_space, DiscreteActionSpace)
        assert values is not None

        scores = self.get_scores(
            subjective_state=subjective_state,
            action_space=action_space,
            values=values,
            representation=representation,
        )  # shape: (batch_size, action_count)

        # Mask unavailable actions and renormalize before sampling.
        if action_availability_mask is not None:
            scores = scores * action_availability_mask
            scores = scores / scores.sum(dim=-1, keepdim=True).clamp(min=1e-8)

        # Sample one action index per batch row from the categorical distribution.
        action_index_batch = torch.multinomial(scores, num_samples=1).squeeze(-1)

        actions = torch.nn.functional.embedding(
            action_index_batch, action_space.actions_batch
        )
        return actions


exploration_module = BoltzmannExploration(temperature=0.5)
explore = torch.compile(exploration_module.act, fullgraph=False)


def make():
    torch.manual_seed(0)
    module = BoltzmannExploration(temperature=0.5)
    space = DiscreteActionSpace([torch.tensor([float(i)]) for i in range(4)])
    state = torch.randn(3, 5)
    values = torch.randn(3, 4)
    mask = torch.tensor([[1.0, 1.0, 0.0, 1.0], [0.0, 1.0, 1.0, 1.0], [1.0, 0.0, 0.0, 1.0]])
    return module.act, [(state, space, values), (state, space, values, mask),
                        (state, space, values, None, torch.tensor([2.0]))]
